// Package chrome drives Debian's headless chromium for the tests that look
// at pages as a browser shows them: it starts one with a fresh profile (or
// skips the test when none is installed), runs chromedp steps and waits
// until the page they leave is parsed whole.
package chrome

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Start starts a headless chromium with a fresh profile and a window of
// width x height, isolated from the network beyond loopback as far as its
// flags allow, with extra options after the common ones; it is stopped
// when the test ends. Without a chromium installed the test is skipped.
//
// Its context is bounded at three minutes, a guard against a hang rather
// than a timed assertion: each step waits for its own condition.
func Start(t testing.TB, width, height int, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no headless browser: install Debian's chromium (apt-get install -y chromium) to run the browser tests")
	}
	opts := append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}, extra...)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Do runs chromedp steps, failing the test on error (what names the step),
// and waits until the page they leave is parsed whole (Loaded).
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	Loaded(t, ctx, what)
}

// Loaded waits until the document's readyState is "complete": a form's
// answer or a followed link is a new page, and an element near its top is
// visible while the rest is still being parsed.
func Loaded(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.readyState`))
		if err == nil && state == "complete" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the page is not loaded after 15 s (readyState %q, %v)", what, state, err)
		}
	}
}

// Run runs one chromedp action that yields a value, failing the test on
// error.
func Run[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
