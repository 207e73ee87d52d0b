package nntptest_test

import (
	"fmt"
	"log"
	"net/textproto"

	"github.com/newsflow/newsflow/runtime/testpeer/nntptest"
)

// A reader: groups and articles in, a client's exchange and what it sent out.
func Example() {
	s, err := nntptest.New(nntptest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.AddGroup(nntptest.Group{Name: "misc.test", Description: "Testing"})
	s.AddArticle(nntptest.NewArticle("<a@example>", "misc.test", "hello", []byte("Hi there.\n")))

	c, err := textproto.Dial("tcp", s.HostPort())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, greeting, _ := c.ReadCodeLine(200)
	fmt.Println("greeting:", greeting)
	c.PrintfLine("GROUP misc.test")
	_, group, _ := c.ReadCodeLine(211)
	fmt.Println("group:", group)
	c.PrintfLine("BODY 1")
	c.ReadCodeLine(222)
	body, _ := c.ReadDotLines()
	fmt.Println("body:", body)
	fmt.Println("BODY commands:", s.Count("BODY"))
	// Output:
	// greeting: nntptest NNTP server ready (nntptest)
	// group: 1 1 1 misc.test
	// body: [Hi there.]
	// BODY commands: 1
}

// A streaming peer that defers one article, with a fault on the third CHECK.
func Example_streaming() {
	s, err := nntptest.New(nntptest.Options{
		Rule: nntptest.Verdicts(map[string]nntptest.Verdict{"<late@x>": nntptest.Defer}, nntptest.Want),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	s.AddFault(nntptest.Fault{Cmd: "CHECK", Nth: 3, Code: 400, Text: "going down", Close: true})

	c, err := textproto.Dial("tcp", s.HostPort())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.ReadCodeLine(200)
	for _, id := range []string{"<now@x>", "<late@x>", "<third@x>"} {
		c.PrintfLine("CHECK %s", id)
		line, _ := c.ReadLine()
		fmt.Println(line)
	}
	_, err = c.ReadLine()
	fmt.Println("then:", err)
	fmt.Println("CHECK commands:", s.Count("CHECK"))
	// Output:
	// 238 <now@x>
	// 431 <late@x>
	// 400 going down
	// then: EOF
	// CHECK commands: 3
}

// Faults as the testscript harness writes them.
func ExampleParseFault() {
	f, err := nntptest.ParseFault(`cmd=BODY nth=2 delay=10ms closeafter=100`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %d %v %d\n", f.Cmd, f.Nth, f.Delay, f.CloseAfter)
	fmt.Println(nntptest.Fault{Cmd: "MODE STREAM", Code: 501, Text: "no streaming"})
	// Output:
	// BODY 2 10ms 100
	// cmd=MODE_STREAM code=501 text="no streaming"
}
