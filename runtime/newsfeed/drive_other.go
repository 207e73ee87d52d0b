//go:build !linux

package newsfeed

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/newsflow/newsflow/machine"
	"github.com/newsflow/newsflow/runtime/driver"
)

// epollAvailable reports that runtime = "epoll" can be used here: it needs
// Linux.
const epollAvailable = false

// eventLoop stands in for the epoll loop, which needs Linux (Validate
// refuses runtime = "epoll" elsewhere).
type eventLoop struct{}

var errNoEpoll = errors.New(`relay: runtime "epoll" needs Linux`)

func newEventLoop(*Relay) (*eventLoop, error) { return nil, errNoEpoll }

func (*eventLoop) attach(net.Conn) (driver.Driver, error) { return nil, errNoEpoll }

func (*eventLoop) start(context.Context, net.Conn, machine.Conn, func(time.Time) error, func(error)) (driver.Driver, error) {
	return nil, errNoEpoll
}

func (*eventLoop) close() error { return nil }

// conns returns how many connections were attached to the loop: none.
func (*eventLoop) conns() int { return 0 }
