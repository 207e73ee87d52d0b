package tomlconf

import (
	"encoding"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AppendTOML appends the configuration v (a struct or a pointer to one,
// with toml tags) as a TOML document that Decode reads back to the same
// values: the plain keys of each table first, in the order of the struct,
// then its tables ([name], from a struct or a pointer to one) and arrays
// of tables ([[name]]), nested ones under a dotted name. Sizes and
// durations are written in the configuration grammar ("64M", "5m0s"),
// other types by their MarshalText, as strings; a
// nil pointer (a key or table without a value) is left out. What
// `PROGRAM config` prints.
func AppendTOML(dst []byte, v any) []byte {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	dst = appendKeys(dst, rv)
	return appendTables(dst, "", rv)
}

var (
	sizeType     = reflect.TypeFor[Size]()
	durationType = reflect.TypeFor[Duration]()
)

// tomlName is a field's key, "" for fields a file does not hold.
func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if !f.IsExported() || name == "-" {
		return ""
	}
	return name
}

// isTable reports whether a field of type t is a table (a struct, or a
// pointer to one) or an array of tables.
func isTable(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct
}

// appendKeys appends the plain keys of a struct, one line each.
func appendKeys(dst []byte, v reflect.Value) []byte {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name := tomlName(f)
		if name == "" || isTable(f.Type) {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		dst = append(dst, name...)
		dst = append(dst, " = "...)
		dst = appendValue(dst, fv)
		dst = append(dst, '\n')
	}
	return dst
}

// appendTables appends the tables and arrays of tables of a struct.
func appendTables(dst []byte, prefix string, v reflect.Value) []byte {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		name := tomlName(f)
		if name == "" || !isTable(f.Type) {
			continue
		}
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Pointer:
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
			fallthrough
		case reflect.Struct:
			dst = fmt.Appendf(dst, "\n[%s%s]\n", prefix, name)
			dst = appendKeys(dst, fv)
			dst = appendTables(dst, prefix+name+".", fv)
		case reflect.Slice:
			for j := range fv.Len() {
				dst = fmt.Appendf(dst, "\n[[%s%s]]\n", prefix, name)
				dst = appendKeys(dst, fv.Index(j))
				dst = appendTables(dst, prefix+name+".", fv.Index(j))
			}
		}
	}
	return dst
}

// appendValue appends one value in TOML syntax. A size is written as a
// string when a unit says it exactly ("64M"), else as octets.
func appendValue(dst []byte, v reflect.Value) []byte {
	switch v.Type() {
	case sizeType:
		if s := Size(v.Int()); s != 0 && s%1024 == 0 {
			return appendString(dst, s.String())
		}
		return strconv.AppendInt(dst, v.Int(), 10)
	case durationType:
		return appendString(dst, Duration(v.Int()).String())
	}
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		text, err := m.MarshalText()
		if err != nil {
			panic(fmt.Sprintf("tomlconf: %s: %v", v.Type(), err))
		}
		return appendString(dst, string(text))
	}
	switch v.Kind() {
	case reflect.String:
		return appendString(dst, v.String())
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(dst, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return appendFloat(dst, v.Float())
	case reflect.Slice, reflect.Array:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendValue(dst, v.Index(i))
		}
		return append(dst, ']')
	}
	panic(fmt.Sprintf("tomlconf: no TOML form for %s", v.Type()))
}

// appendFloat appends x as a TOML float: always with a fraction or an
// exponent, so that it reads back as a float ("95.0"), and inf and nan as
// TOML writes them.
func appendFloat(dst []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return append(dst, "nan"...)
	case math.IsInf(x, 1):
		return append(dst, "inf"...)
	case math.IsInf(x, -1):
		return append(dst, "-inf"...)
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return append(dst, s...)
}

// appendString appends s as a TOML basic string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			dst = fmt.Appendf(dst, `\u%04X`, r)
		default:
			dst = utf8.AppendRune(dst, r)
		}
	}
	return append(dst, '"')
}
