package searchindex

// Folding: search ignores case and accents, so that "cafe" finds "café",
// "muller" finds "Müller" and "strasse" finds "Straße". Subjects, authors,
// body words and queries are all folded the same way: lower-cased, and
// the Latin letters with diacritics (and the ligatures ß, æ, œ, þ) written
// as their base letters.

import (
	"unicode"
	"unicode/utf8"
)

// foldTable maps a lower-case Latin letter to its base letters.
var foldTable = map[rune]string{'ß': "ss", 'à': "a", 'á': "a", 'â': "a", 'ã': "a", 'ä': "a", 'å': "a", 'æ': "ae", 'ç': "c", 'è': "e", 'é': "e", 'ê': "e", 'ë': "e", 'ì': "i", 'í': "i", 'î': "i", 'ï': "i", 'ð': "d", 'ñ': "n", 'ò': "o", 'ó': "o", 'ô': "o", 'õ': "o", 'ö': "o", 'ø': "o", 'ù': "u", 'ú': "u", 'û': "u", 'ü': "u", 'ý': "y", 'þ': "th", 'ÿ': "y", 'ā': "a", 'ă': "a", 'ą': "a", 'ć': "c", 'ĉ': "c", 'ċ': "c", 'č': "c", 'ď': "d", 'đ': "d", 'ē': "e", 'ĕ': "e", 'ė': "e", 'ę': "e", 'ě': "e", 'ĝ': "g", 'ğ': "g", 'ġ': "g", 'ģ': "g", 'ĥ': "h", 'ħ': "h", 'ĩ': "i", 'ī': "i", 'ĭ': "i", 'į': "i", 'ı': "i", 'ĳ': "ij", 'ĵ': "j", 'ķ': "k", 'ĺ': "l", 'ļ': "l", 'ľ': "l", 'ŀ': "l", 'ł': "l", 'ń': "n", 'ņ': "n", 'ň': "n", 'ŉ': "n", 'ō': "o", 'ŏ': "o", 'ő': "o", 'œ': "oe", 'ŕ': "r", 'ŗ': "r", 'ř': "r", 'ś': "s", 'ŝ': "s", 'ş': "s", 'š': "s", 'ţ': "t", 'ť': "t", 'ŧ': "t", 'ũ': "u", 'ū': "u", 'ŭ': "u", 'ů': "u", 'ű': "u", 'ų': "u", 'ŵ': "w", 'ŷ': "y", 'ź': "z", 'ż': "z", 'ž': "z", 'ſ': "s", 'ƀ': "b", 'ƃ': "b", 'ƈ': "c", 'ƌ': "d", 'ƒ': "f", 'ƙ': "k", 'ƚ': "l", 'ƞ': "n", 'ơ': "o", 'ƥ': "p", 'ƭ': "t", 'ư': "u", 'ƴ': "y", 'ƶ': "z", 'ǎ': "a", 'ǐ': "i", 'ǒ': "o", 'ǔ': "u", 'ǖ': "u", 'ǘ': "u", 'ǚ': "u", 'ǜ': "u", 'ǟ': "a", 'ǡ': "a", 'ǥ': "g", 'ǧ': "g", 'ǩ': "k", 'ǫ': "o", 'ǭ': "o", 'ǰ': "j", 'ǵ': "g", 'ǹ': "n", 'ǻ': "a", 'ȁ': "a", 'ȃ': "a", 'ȅ': "e", 'ȇ': "e", 'ȉ': "i", 'ȋ': "i", 'ȍ': "o", 'ȏ': "o", 'ȑ': "r", 'ȓ': "r", 'ȕ': "u", 'ȗ': "u", 'ș': "s", 'ț': "t", 'ȟ': "h", 'ȥ': "z", 'ȧ': "a", 'ȩ': "e", 'ȫ': "o", 'ȭ': "o", 'ȯ': "o", 'ȱ': "o", 'ȳ': "y", 'ȼ': "c", 'ȿ': "s", 'ɀ': "z", 'ɇ': "e", 'ɉ': "j", 'ɍ': "r", 'ɏ': "y", 'ḁ': "a", 'ḃ': "b", 'ḅ': "b", 'ḇ': "b", 'ḉ': "c", 'ḋ': "d", 'ḍ': "d", 'ḏ': "d", 'ḑ': "d", 'ḓ': "d", 'ḕ': "e", 'ḗ': "e", 'ḙ': "e", 'ḛ': "e", 'ḝ': "e", 'ḟ': "f", 'ḡ': "g", 'ḣ': "h", 'ḥ': "h", 'ḧ': "h", 'ḩ': "h", 'ḫ': "h", 'ḭ': "i", 'ḯ': "i", 'ḱ': "k", 'ḳ': "k", 'ḵ': "k", 'ḷ': "l", 'ḹ': "l", 'ḻ': "l", 'ḽ': "l", 'ḿ': "m", 'ṁ': "m", 'ṃ': "m", 'ṅ': "n", 'ṇ': "n", 'ṉ': "n", 'ṋ': "n", 'ṍ': "o", 'ṏ': "o", 'ṑ': "o", 'ṓ': "o", 'ṕ': "p", 'ṗ': "p", 'ṙ': "r", 'ṛ': "r", 'ṝ': "r", 'ṟ': "r", 'ṡ': "s", 'ṣ': "s", 'ṥ': "s", 'ṧ': "s", 'ṩ': "s", 'ṫ': "t", 'ṭ': "t", 'ṯ': "t", 'ṱ': "t", 'ṳ': "u", 'ṵ': "u", 'ṷ': "u", 'ṹ': "u", 'ṻ': "u", 'ṽ': "v", 'ṿ': "v", 'ẁ': "w", 'ẃ': "w", 'ẅ': "w", 'ẇ': "w", 'ẉ': "w", 'ẋ': "x", 'ẍ': "x", 'ẏ': "y", 'ẑ': "z", 'ẓ': "z", 'ẕ': "z", 'ẖ': "h", 'ẗ': "t", 'ẘ': "w", 'ẙ': "y", 'ạ': "a", 'ả': "a", 'ấ': "a", 'ầ': "a", 'ẩ': "a", 'ẫ': "a", 'ậ': "a", 'ắ': "a", 'ằ': "a", 'ẳ': "a", 'ẵ': "a", 'ặ': "a", 'ẹ': "e", 'ẻ': "e", 'ẽ': "e", 'ế': "e", 'ề': "e", 'ể': "e", 'ễ': "e", 'ệ': "e", 'ỉ': "i", 'ị': "i", 'ọ': "o", 'ỏ': "o", 'ố': "o", 'ồ': "o", 'ổ': "o", 'ỗ': "o", 'ộ': "o", 'ớ': "o", 'ờ': "o", 'ở': "o", 'ỡ': "o", 'ợ': "o", 'ụ': "u", 'ủ': "u", 'ứ': "u", 'ừ': "u", 'ử': "u", 'ữ': "u", 'ự': "u", 'ỳ': "y", 'ỵ': "y", 'ỷ': "y", 'ỹ': "y"}

// foldRune appends r folded to dst.
func foldRune(dst []byte, r rune) []byte {
	r = unicode.ToLower(r)
	if b, ok := foldTable[r]; ok {
		return append(dst, b...)
	}
	return utf8.AppendRune(dst, r)
}

// fold is s lower-cased and without diacritics.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || (c >= 'A' && c <= 'Z') {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	b := make([]byte, 0, len(s)+4)
	for _, r := range s {
		b = foldRune(b, r)
	}
	return string(b)
}
