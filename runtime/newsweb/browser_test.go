package newsweb

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/newsflow/newsflow/runtime/testpeer/chrome"
)

// browser starts a headless chromium (chrome.Start) whose scrollbars
// take no width, so that a page's layout is measured at the window's.
func browser(t *testing.T) context.Context {
	return chrome.Start(t, 1100, 900, chromedp.Flag("hide-scrollbars", true))
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

// run runs one chromedp action that yields a value (chrome.Run).
func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	return chrome.Run(t, ctx, what, a)
}

// do runs chromedp steps and waits until the page they leave is parsed
// whole (chrome.Do).
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	chrome.Do(t, ctx, what, steps...)
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
