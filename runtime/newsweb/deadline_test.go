package newsweb

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Before anyone waits, the bound is only a time: no real context, Err nil,
// the deadline reported; Done makes the real context.
func TestLazyDeadlineArmsOnDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deadline := time.Now().Add(time.Second)
		ctx, release := withLazyDeadline(context.Background(), deadline)
		defer release()
		if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
			t.Errorf("Deadline() = %v, %v; want %v", d, ok, deadline)
		}
		if err := ctx.Err(); err != nil || ctx.current() != nil {
			t.Fatalf("before any wait: Err %v, real context %v; want nil, none", err, ctx.current())
		}
		done := ctx.Done()
		if ctx.current() == nil || isClosed(done) {
			t.Fatalf("after Done: real context %v, closed %v; want one, open", ctx.current(), isClosed(done))
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !isClosed(done) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("past the deadline: closed %v, Err %v; want closed, deadline exceeded", isClosed(done), ctx.Err())
		}
	})
}

// Past the deadline, Err says so even though nobody waited, and Done is
// closed with it (the contract: Err non-nil only once Done is closed).
func TestLazyDeadlineExpiredWithoutWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), time.Now().Add(time.Second))
		defer release()
		time.Sleep(2 * time.Second)
		if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) || !isClosed(ctx.Done()) {
			t.Errorf("Err %v, Done closed %v; want deadline exceeded, closed", err, isClosed(ctx.Done()))
		}
	})
}

// A cancelled parent (the client went away) cancels the request.
func TestLazyDeadlineParentCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, release := withLazyDeadline(parent, time.Now().Add(time.Minute))
		defer release()
		cancel()
		if err := ctx.Err(); !errors.Is(err, context.Canceled) || !isClosed(ctx.Done()) {
			t.Errorf("Err %v, Done closed %v; want canceled, closed", err, isClosed(ctx.Done()))
		}
	})
}

// A context derived from the request's (what a fetch does) ends with it:
// at the deadline, and when the request is released.
func TestLazyDeadlineDerived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, release := withLazyDeadline(context.Background(), time.Now().Add(time.Second))
		defer release()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		if d, ok := child.Deadline(); !ok || !d.Equal(time.Now().Add(time.Second)) {
			t.Errorf("child Deadline() = %v, %v", d, ok)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if !isClosed(child.Done()) || !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Errorf("child past the deadline: closed %v, Err %v", isClosed(child.Done()), child.Err())
		}

		ctx2, release2 := withLazyDeadline(context.Background(), time.Now().Add(time.Minute))
		child2, cancel2 := context.WithCancel(ctx2)
		defer cancel2()
		release2()
		synctest.Wait()
		if !isClosed(child2.Done()) || !errors.Is(child2.Err(), context.Canceled) {
			t.Errorf("child of a released request: closed %v, Err %v", isClosed(child2.Done()), child2.Err())
		}
	})
}

type ctxKey struct{}

// Values come from the parent, before and after the real context exists.
func TestLazyDeadlineValue(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	ctx, release := withLazyDeadline(parent, time.Now().Add(time.Minute))
	defer release()
	before := ctx.Value(ctxKey{})
	ctx.Done()
	if after := ctx.Value(ctxKey{}); before != "v" || after != "v" {
		t.Errorf("Value before %v, after arming %v; want v, v", before, after)
	}
}

// A bound nobody armed takes the next request's parent and deadline; an
// armed one is left as it is (whoever armed it may hold it still).
func TestLazyDeadlineReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first, second := time.Now().Add(time.Second), time.Now().Add(time.Hour)
		ctx, release := withLazyDeadline(context.Background(), first)
		release()
		parent := context.WithValue(context.Background(), leakKey{}, "second")
		if !ctx.reset(parent, second) {
			t.Fatal("an unarmed bound was not reset")
		}
		if d, _ := ctx.Deadline(); !d.Equal(second) || ctx.Value(leakKey{}) != "second" {
			t.Errorf("after reset: deadline %v, value %v; want %v, the new parent's", d, ctx.Value(leakKey{}), second)
		}
		ctx.Done()
		ctx.release()
		if ctx.reset(context.Background(), first) {
			t.Fatal("an armed bound was reset")
		}
		if d, _ := ctx.Deadline(); !d.Equal(second) || !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("an armed bound after a refused reset: deadline %v, Err %v; want %v, cancelled", d, ctx.Err(), second)
		}
	})
}
