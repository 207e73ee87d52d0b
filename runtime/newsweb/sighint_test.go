package newsweb

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The form's note on the signature separator keeps `"-- "` on one line at
// every width from a small phone's to a desktop's: a break at its space would show `"--` and a
// lone quote mark.
func TestBrowserSignatureHint(t *testing.T) {
	ctx := browser(t)
	s := postingSite(t, 0, map[string]string{"dora": "secret"})
	do(t, ctx, "log in",
		chromedp.Navigate(s.url+"/login?next=/post%3Fgroup%3Dmisc.test"),
		chromedp.SetValue(chromedp.CSS(`input[name=user]`), "dora"),
		chromedp.SetValue(chromedp.CSS(`input[name=password]`), "secret"),
		chromedp.Click(chromedp.CSS(`form.compose button`)),
		chromedp.WaitVisible(chromedp.CSS(`textarea[name=body]`)))
	for width := int64(300); width <= 1280; width += 2 {
		do(t, ctx, "viewport", chromedp.EmulateViewport(width, 844))
		lines := run(t, ctx, "hint lines", chromedp.Evaluate[float64](`(() => {
			const p = document.querySelector('form.compose p.muted');
			const want = '"-- "';
			const at = p.textContent.indexOf(want);
			if (at < 0) return -1;
			const w = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
			const r = document.createRange();
			let pos = 0, started = false;
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				const len = n.textContent.length;
				if (!started && at < pos + len) { r.setStart(n, at - pos); started = true; }
				if (started && at + want.length <= pos + len) { r.setEnd(n, at + want.length - pos); break; }
				pos += len;
			}
			return new Set(Array.from(r.getClientRects()).filter(c => c.width > 0).map(c => Math.round(c.bottom))).size;
		})()`))
		if lines != 1 {
			t.Errorf("%d px: the note's \"-- \" is on %v lines", width, lines)
		}
	}
}
