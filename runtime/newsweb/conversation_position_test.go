package newsweb

import (
	"fmt"
	"math/rand/v2"
	"testing"

	mreader "github.com/newsflow/newsflow/machine/reader"
)

// position agrees with flatten, which a thread page renders from: the
// length of the list and the index of the first node with an id, for
// every id of random trees (repeated ids included) and one not there.
func TestPositionMatchesFlatten(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for tree := range 200 {
		nodes := []*mreader.Node{{ID: "<0@t>"}}
		for i := 1; i < 1+r.IntN(60); i++ {
			n := &mreader.Node{ID: fmt.Sprintf("<%d@t>", r.IntN(i+1))} // ids may repeat
			parent := nodes[r.IntN(len(nodes))]
			n.Parent = parent
			parent.Children = append(parent.Children, n)
			nodes = append(nodes, n)
		}
		list, _ := flatten(nodes[0])
		for _, id := range append([]string{"<none@t>"}, func() []string {
			var ids []string
			for _, n := range nodes {
				ids = append(ids, n.ID)
			}
			return ids
		}()...) {
			want := -1
			for i, n := range list {
				if n.ID == id {
					want = i
					break
				}
			}
			if count, index := position(nodes[0], id); count != len(list) || index != want {
				t.Fatalf("tree %d, %s: position %d, %d; flatten: %d, %d", tree, id, count, index, len(list), want)
			}
		}
	}
}
