// Package tomlconf holds TOML configuration files decoded strictly, with
// errors located at FILE:LINE and key.
package tomlconf

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Error is a configuration mistake, located in its file.
type Error struct {
	File string // the configuration file
	Line int    // 1-based; 0 when unknown or the mistake is an absent key
	Key  string // the key concerned ("peer[2].window"); empty for syntax errors
	Msg  string
}

// Error formats the mistake as FILE:LINE: KEY: MESSAGE (LINE and KEY are
// left out when unknown).
func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Key + ": " + e.Msg
}

// Errors returns the *Error values in err, which may be one or several
// joined (as Decode returns them), in order.
func Errors(err error) []*Error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			out = append(out, Errors(e)...)
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}

// Keys maps each key path set in a file to its line. Tables of an array
// of tables are numbered from 1: "peer[2].window".
type Keys map[string]int

// Has reports whether the file set key.
func (k Keys) Has(key string) bool { _, ok := k[key]; return ok }

// Line is the line of key or, when the file does not set it, the line of
// its table ("peer[2]" for "peer[2].port"); 0 when neither is known.
func (k Keys) Line(key string) int {
	line, ok := k[key]
	if !ok {
		if i := strings.LastIndexByte(key, '.'); i > 0 {
			line = k[key[:i]]
		}
	}
	return line
}

// Indexed returns the numbered key path ("server[2].port") of the key on
// line whose go-toml name ("server.port") is key; key itself when none is
// found.
func (k Keys) Indexed(line int, key string) string {
	last := key
	if i := strings.LastIndexByte(key, '.'); i >= 0 {
		last = key[i+1:]
	}
	for p, l := range k {
		if l == line && (p == key || strings.HasSuffix(p, "."+last)) {
			return p
		}
	}
	return key
}

// Number renames the keys of the mistakes in err (as Decode returns it)
// by the number of their table in an array of tables: go-toml's
// "server.port" on the line of the second [[server]]'s port becomes
// "server[2].port".
func (k Keys) Number(err error) {
	for _, e := range Errors(err) {
		if e.Key != "" {
			e.Key = k.Indexed(e.Line, e.Key)
		}
	}
}

// Load reads the configuration file and hands its text to parse (a
// program's ParseConfig). A file that cannot be read is an error
// "config: open FILE: ...".
func Load[T any](file string, parse func(name string, text []byte) (T, error)) (T, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("config: %w", err)
	}
	return parse(file, text)
}

// Decode decodes the TOML text into v, which must be a pointer. Keys v has
// no field for are errors. Mistakes are *Error values naming name, the
// line and the key (go-toml's dotted name, "peer.windw"), several joined
// when there are several unknown keys. The Keys of the file come back
// whenever the text parses, even when decoding fails.
func Decode(name string, text []byte, v any) (Keys, error) {
	keys, err := index(text)
	if err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) {
			line := 1 + bytes.Count(text[:highlightOffset(text, pe.Highlight)], []byte("\n"))
			return nil, &Error{File: name, Line: line, Msg: pe.Message}
		}
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if err := unitKinds(name, text, reflect.TypeOf(v)); err != nil {
		return keys, err
	}
	dec := toml.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return keys, decodeError(name, err, reflect.TypeOf(v))
	}
	return keys, nil
}

// unitKinds refuses the first value of a kind its Size or Duration key
// cannot take, as go-toml refuses one of the wrong type: a size is a
// string or an integer, a duration a string. go-toml would hand true or
// 1.5 to a size's UnmarshalText as text, or truncate it, and a bare
// integer would be a duration of nanoseconds.
func unitKinds(name string, text []byte, target reflect.Type) error {
	var p unstable.Parser
	p.Reset(text)
	var table []string
	parts := func(it unstable.Iterator) []string {
		var k []string
		for it.Next() {
			k = append(k, string(it.Node().Data))
		}
		return k
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = parts(e.Key())
		case unstable.KeyValue:
			key := append(append([]string(nil), table...), parts(e.Key())...)
			t := keyType(target, key)
			kind := e.Value().Kind
			var ok bool
			switch t {
			case sizeType:
				ok = kind == unstable.String || kind == unstable.Integer
			case durationType:
				ok = kind == unstable.String
			default:
				continue
			}
			if !ok {
				line := 1 + bytes.Count(text[:e.Value().Raw.Offset], []byte("\n"))
				if e.Value().Raw.Length == 0 {
					line = 1 + bytes.Count(text[:firstOffset(e.Key())], []byte("\n"))
				}
				return &Error{File: name, Line: line, Key: strings.Join(key, "."),
					Msg: "wrong type of value: want " + wants(t) + ", found " + nodeKinds[kind]}
			}
		}
	}
	return nil
}

// firstOffset is the offset of a key's first part.
func firstOffset(it unstable.Iterator) uint32 {
	if it.Next() {
		return it.Node().Raw.Offset
	}
	return 0
}

// nodeKinds names a TOML value's kind as a newcomer reads it.
var nodeKinds = map[unstable.Kind]string{
	unstable.String: "a string", unstable.Integer: "an integer", unstable.Float: "a number with a fraction",
	unstable.Bool: "true or false", unstable.DateTime: "a date-time", unstable.LocalDateTime: "a date-time",
	unstable.LocalDate: "a date", unstable.LocalTime: "a time", unstable.Array: "a list",
	unstable.InlineTable: "a table",
}

// MaxDecodeErrors bounds the values of the wrong type DecodeAll reports
// one by one.
const MaxDecodeErrors = 100

// DecodeAll is Decode reporting every mistake of the text, not only the
// first: a value of the wrong type is reported, its line left out and the
// text decoded again into v (zeroed first), up to MaxDecodeErrors times;
// unknown keys are reported together once the rest is decoded. The keys
// of the mistakes are numbered ("server[2].port"), the mistakes come in
// the order of their lines, and the Keys of the whole text come back
// whenever it parses. A syntax error stops at the first. On return v
// holds every value of the right type.
func DecodeAll(name string, text []byte, v any) (Keys, error) {
	keys, err := Decode(name, text, v)
	if err == nil || keys == nil {
		return keys, err
	}
	var errs []error
	work := slices.Clone(text)
	blanked := 0
	for tries := 0; ; tries++ {
		keys.Number(err)
		es := Errors(err)
		if len(es) == 1 && es[0].Line == blanked {
			break // the line is empty now: the mistake is elsewhere, unlocated
		}
		for _, e := range es {
			errs = append(errs, e)
		}
		if len(es) != 1 || strings.HasPrefix(es[0].Msg, unknownKey) || es[0].Line < 1 || tries >= MaxDecodeErrors {
			break
		}
		blanked = es[0].Line
		work = blankLine(work, blanked)
		reflect.ValueOf(v).Elem().SetZero()
		var k Keys
		if k, err = Decode(name, work, v); err == nil || k == nil {
			// Decoded, or leaving out a value over several lines broke
			// the syntax: what was found is the report.
			break
		}
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		var ea, eb *Error
		if !errors.As(a, &ea) || !errors.As(b, &eb) {
			return 0
		}
		return ea.Line - eb.Line
	})
	return keys, errors.Join(errs...)
}

// blankLine returns text with its 1-based line emptied (its line break
// kept, so that the lines after it keep their numbers).
func blankLine(text []byte, line int) []byte {
	start := 0
	for i := 1; i < line; i++ {
		j := bytes.IndexByte(text[start:], '\n')
		if j < 0 {
			return text
		}
		start += j + 1
	}
	end := len(text)
	if j := bytes.IndexByte(text[start:], '\n'); j >= 0 {
		end = start + j
	}
	return append(text[:start:start], text[end:]...)
}

// decodeError turns go-toml's decoding errors into *Error values; target
// is the type decoded into, for naming what a key wants.
func decodeError(name string, err error, target reflect.Type) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var errs []error
		for _, e := range strict.Errors {
			row, _ := e.Position()
			msg := unknownKey
			if k := closestKey(target, e.Key()); k != "" {
				msg += "; did you mean " + k + "?"
			}
			errs = append(errs, &Error{File: name, Line: row, Key: strings.Join(e.Key(), "."), Msg: msg})
		}
		return errors.Join(errs...)
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		// A value a type's own UnmarshalText refused says so in its own
		// words; go-toml's type errors name Go types, so say in TOML's
		// words what the key wants and what the file has.
		if m := typeMismatch.FindStringSubmatch(msg); m != nil {
			msg = "wrong type of value: want " + wants(keyType(target, de.Key())) + ", found " + tomlKinds[m[1]]
		}
		return &Error{File: name, Line: row, Key: strings.Join(de.Key(), "."), Msg: msg}
	}
	return &Error{File: name, Msg: err.Error()}
}

// typeMismatch matches go-toml's type error; m[1] is the TOML kind found.
var typeMismatch = regexp.MustCompile(`^cannot decode TOML (string|integer|float|boolean|datetime|local datetime|local date|local time|array|table|inline table) into `)

// tomlKinds names a TOML kind as a newcomer reads it.
var tomlKinds = map[string]string{
	"string": "a string", "integer": "an integer", "float": "a number with a fraction",
	"boolean": "true or false", "datetime": "a date-time", "local datetime": "a date-time",
	"local date": "a date", "local time": "a time", "array": "a list",
	"table": "a table", "inline table": "a table",
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// keyType is the Go type key (a path of TOML names, without array
// indexes) decodes into in t; nil when it cannot be followed.
func keyType(t reflect.Type, key []string) reflect.Type {
	for _, part := range key {
		t = elemType(t)
		switch {
		case t == nil:
			return nil
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			var next reflect.Type
			for i := range t.NumField() {
				f := t.Field(i)
				tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				if tag == part || (tag == "" && strings.EqualFold(f.Name, part)) {
					next = f.Type
					break
				}
			}
			t = next
		default:
			return nil
		}
	}
	return t
}

// elemType is t with its pointers, slices and arrays taken off: the type
// of the table or value they hold.
func elemType(t reflect.Type) reflect.Type {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		t = t.Elem()
	}
	return t
}

// unknownKey begins the message of a key the configuration does not have.
const unknownKey = "unknown key"

// closestKey returns the key of the table holding key (a path of TOML
// names) in t that is nearest to key's last name, for a message that
// names what was meant: "" unless one is a typo away (at most a third of
// its letters, and at least one, added, left out, changed or swapped).
func closestKey(t reflect.Type, key []string) string {
	if len(key) == 0 {
		return ""
	}
	t = elemType(keyType(t, key[:len(key)-1]))
	if t == nil || t.Kind() != reflect.Struct {
		return ""
	}
	name := key[len(key)-1]
	best, bestD := "", max(1, len(name)/3)+1
	for i := range t.NumField() {
		k := tomlName(t.Field(i))
		if k == "" {
			continue
		}
		if d := typoDistance(name, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// typoDistance counts the letters to add, leave out, change or swap with
// their neighbour to turn a into b (the optimal string alignment distance).
func typoDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// wants says in TOML's words what a value of type t is written as.
func wants(t reflect.Type) string {
	if t == nil {
		return "another type (see the configuration page)"
	}
	switch t {
	case durationType, reflect.TypeFor[time.Duration]():
		return `a duration string (e.g. "90s", "1h30m", "7d")`
	case sizeType:
		return `a size string (e.g. "512K", "10MB") or an integer`
	}
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return wants(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a table"
	}
	return "another type (see the configuration page)"
}

// highlightOffset finds where the parser's highlighted bytes (a subslice
// of text) sit in text.
func highlightOffset(text, highlight []byte) int {
	if len(highlight) == 0 {
		return len(text)
	}
	for i := range text {
		if len(text)-i >= len(highlight) && &text[i] == &highlight[0] {
			return i
		}
	}
	return 0
}

// index parses the document and maps each key path to its line.
func index(text []byte) (Keys, error) {
	keys := Keys{}
	var p unstable.Parser
	p.Reset(text)
	table := ""
	arrays := map[string]int{}
	lineOf := func(off uint32) int { return 1 + bytes.Count(text[:off], []byte("\n")) }
	join := func(it unstable.Iterator) (string, uint32) {
		var parts []string
		var first uint32
		for it.Next() {
			if parts == nil {
				first = it.Node().Raw.Offset
			}
			parts = append(parts, string(it.Node().Data))
		}
		return strings.Join(parts, "."), first
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table:
			table, _ = join(e.Key())
		case unstable.ArrayTable:
			k, off := join(e.Key())
			arrays[k]++
			table = k + "[" + strconv.Itoa(arrays[k]) + "]"
			keys[table] = lineOf(off)
		case unstable.KeyValue:
			k, off := join(e.Key())
			if table != "" {
				k = table + "." + k
			}
			keys[k] = lineOf(off)
		}
	}
	return keys, p.Error()
}
