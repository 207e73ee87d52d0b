package newsweb

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds Debian's chromium (or another Chrome) or skips.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no headless browser: install Debian's chromium (apt-get install -y chromium) to run the browser tests")
	return ""
}

// browser starts a headless chromium with a fresh profile, isolated from
// the network beyond loopback as far as its flags allow.
func browser(t *testing.T) context.Context {
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
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
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	// A guard against a hang, not a timed assertion: each step waits for
	// its own condition, and the longest test (TestBrowserSignatureHint,
	// some 500 widths) takes half a minute on a loaded machine.
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// ink counts the pixels of img that differ clearly from bg.
func ink(img image.Image, bg color.Color) int {
	br, bgg, bb, _ := bg.RGBA()
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if absDiff(r, br)+absDiff(g, bgg)+absDiff(bl, bb) > 3*0x2000 {
				n++
			}
		}
	}
	return n
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// run runs one chromedp action that yields a value, failing the test on error.
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// do runs chromedp steps, failing the test on error, and waits until the
// page they leave is parsed whole.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	loaded(t, ctx, what)
}

// loaded waits until the document's readyState is "complete": a form's
// answer or a followed link is a new page, and an element near its top is
// visible while the rest is still being parsed.
func loaded(t *testing.T, ctx context.Context, what string) {
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

// The reader in a real browser: group list -> group -> thread -> article by
// clicking links; the article's text is in the DOM and painted on screen.
func TestBrowserReads(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)

	do(t, ctx, "group list", chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS("table.groups")))
	if title := run(t, ctx, "title", chromedp.Title()); title != "Newsgroups · newsweb" {
		t.Errorf("group list title %q", title)
	}
	do(t, ctx, "open the group",
		chromedp.Click(chromedp.CSS(`a.group[href="/groups/misc.test"]`)),
		chromedp.WaitVisible(chromedp.CSS("table.threads")))
	do(t, ctx, "open the thread",
		chromedp.Click(chromedp.CSS(`a.thread[href="/groups/misc.test/threads/m1@t"]`)),
		chromedp.WaitVisible(chromedp.CSS("ul.tree.root")))
	// The tree as the browser built it: each node's message-id with its
	// nesting depth among the lists.
	shape := run(t, ctx, "thread tree", chromedp.Evaluate[string](`Array.from(document.querySelectorAll('.node')).map(n => {
		let d = 0; for (let e = n.parentElement; e; e = e.parentElement) if (e.matches('ul.tree:not(.root)')) d++;
		return d + ' ' + n.dataset.msgid; }).join('|')`))
	if want := "0 <m1@t>|1 <m4@t>|2 <m5@t>|1 <m2@t>|2 <m3@t>"; shape != want {
		t.Errorf("thread tree in the browser: %q, want %q", shape, want)
	}
	// An outline entry jumps to its post on the page.
	do(t, ctx, "outline entry", chromedp.Click(chromedp.CSS(`.node[data-msgid="<m4@t>"] a.article`)))
	if loc := run(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "/groups/misc.test/threads/m1@t#p") {
		t.Errorf("the outline entry led to %q, want an anchor on the thread page", loc)
	}
	do(t, ctx, "open the article",
		chromedp.Click(chromedp.CSS(`article[data-post="<m4@t>"] a.permalink`)),
		chromedp.WaitVisible(chromedp.CSS("#body")))
	if loc := run(t, ctx, "location", chromedp.Location()); !strings.HasSuffix(loc, "/articles/m4@t?group=misc.test") {
		t.Errorf("article location %q", loc)
	}
	text := run(t, ctx, "article text", chromedp.Text(chromedp.CSS("#body")))
	if !strings.Contains(text, "first reply") || !strings.Contains(text, "> the root article") {
		t.Errorf("article text in the DOM: %q", text)
	}
	shot := run(t, ctx, "screenshot", chromedp.Screenshot(chromedp.CSS("#body")))
	// The same element with only the text made invisible.
	run(t, ctx, "hide the text", chromedp.Evaluate[bool](`for (const e of [document.getElementById('body'), ...document.querySelectorAll('#body *')]) e.style.color = 'transparent'; true`))
	blank := run(t, ctx, "screenshot without text", chromedp.Screenshot(chromedp.CSS("#body")))

	// OCR-free check that the text is painted: the body's screenshot has
	// ink that disappears when only the text colour becomes transparent,
	// so that ink is the article's glyphs (not borders or backgrounds).
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	empty, err := png.Decode(bytes.NewReader(blank))
	if err != nil {
		t.Fatalf("second screenshot is not a PNG: %v", err)
	}
	bg := empty.At(empty.Bounds().Min.X, empty.Bounds().Min.Y)
	withText, without := ink(img, bg), ink(empty, bg)
	if img.Bounds().Dx() < 100 || withText < 200 || without > withText/20 {
		t.Errorf("screenshot %v: %d ink pixels with the text, %d without; want the text to account for the ink",
			img.Bounds(), withText, without)
	}
	t.Logf("article screenshot %v: %d ink pixels, %d with the text hidden", img.Bounds(), withText, without)
}

// An article whose subject and body are <script> and <img onerror> shows
// them as text; nothing runs (the script would set the title and add an
// element).
func TestBrowserScriptIsText(t *testing.T) {
	ctx := browser(t)
	s := startSite(t)
	for _, path := range []string{"/articles/xss@t", "/groups/misc.test?page=2", "/groups/misc.test/threads/xss@t"} {
		do(t, ctx, path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		title := run(t, ctx, "title", chromedp.Title())
		body := run(t, ctx, "text", chromedp.Text(chromedp.CSS("main")))
		injected := run(t, ctx, "elements", chromedp.Evaluate[bool](`document.getElementById('pwned') !== null || document.querySelectorAll('main script, main img, blink').length > 0`))
		if title == "pwned" || (strings.Contains(title, "pwned") && !strings.Contains(title, "<script>")) {
			t.Errorf("%s: the article's script ran: title %q", path, title)
		}
		if injected {
			t.Errorf("%s: the article's markup became elements", path)
		}
		if !strings.Contains(body, "<script>document.title='pwned'") {
			t.Errorf("%s: the script is not shown as text: %q", path, body)
		}
	}
}
