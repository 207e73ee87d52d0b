package newsget

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/newsflow/newsflow/machine/download"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// FillDefaults writes into c the value of every key the file left out,
// as newsget uses it: after it, c says in full what the program runs
// with. c must be checked (Check, CheckServe) and its directories
// resolved (ResolveDirs).
func (c *Config) FillDefaults() {
	yes := func(p **bool) {
		if *p == nil {
			t := true
			*p = &t
		}
	}
	if c.ArticleRetries == 0 {
		c.ArticleRetries = download.DefaultArticleRetries
	}
	if c.ArticleTimeout == 0 {
		c.ArticleTimeout = tomlconf.Duration(DefaultArticleTimeout)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = tomlconf.Duration(DefaultConnectTimeout)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = tomlconf.Duration(DefaultIdleTimeout)
	}
	if c.QuotaDay == 0 {
		c.QuotaDay = 1
	}
	yes(&c.Unpack)
	yes(&c.Cleanup)
	for i := range c.Servers {
		s := &c.Servers[i]
		yes(&s.CertVerification)
		yes(&s.Active)
		if s.Pipeline == 0 {
			s.Pipeline = download.DefaultPipeline
		}
		if s.IPVersion == "" {
			s.IPVersion = "auto"
		}
	}
	if c.Serve.CompleteDir == "" {
		c.Serve.CompleteDir = filepath.Join(c.DownloadDir, "complete")
	}
	if c.Serve.Hostnames == nil {
		c.Serve.Hostnames = []string{}
	}
	for i := range c.Categories {
		if c.Categories[i].Priority == "" {
			c.Categories[i].Priority = "normal"
		}
	}
}

// AppendTOML appends c as a TOML document that ParseConfig reads back to
// the same configuration: every key of every table, in the order of the
// struct, sizes and durations in the configuration grammar ("64M", "5m").
// Nil pointers (keys without a default) are left out.
func (c *Config) AppendTOML(dst []byte) []byte {
	v := reflect.ValueOf(c).Elem()
	dst = appendKeys(dst, v)
	dst = appendTables(dst, "", v)
	return dst
}

var (
	sizeType     = reflect.TypeFor[tomlconf.Size]()
	durationType = reflect.TypeFor[tomlconf.Duration]()
)

// tomlName is a field's key, "" for fields the file does not hold.
func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if !f.IsExported() || name == "-" {
		return ""
	}
	return name
}

// isTable reports whether a field is a table or an array of tables.
func isTable(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != sizeType && t != durationType ||
		t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct
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
		if fv.Kind() == reflect.Struct {
			dst = fmt.Appendf(dst, "\n[%s%s]\n", prefix, name)
			dst = appendKeys(dst, fv)
			dst = appendTables(dst, prefix+name+".", fv)
			continue
		}
		for j := range fv.Len() {
			dst = fmt.Appendf(dst, "\n[[%s%s]]\n", prefix, name)
			dst = appendKeys(dst, fv.Index(j))
		}
	}
	return dst
}

// appendValue appends one value in TOML syntax.
func appendValue(dst []byte, v reflect.Value) []byte {
	switch {
	case v.Type() == sizeType:
		if v.Int() == 0 {
			return append(dst, '0')
		}
		return appendString(dst, tomlconf.Size(v.Int()).String())
	case v.Type() == durationType:
		return appendString(dst, tomlconf.Duration(v.Int()).String())
	}
	switch v.Kind() {
	case reflect.String:
		return appendString(dst, v.String())
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.AppendInt(dst, v.Int(), 10)
	case reflect.Slice:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendValue(dst, v.Index(i))
		}
		return append(dst, ']')
	}
	panic(fmt.Sprintf("newsget: no TOML form for %s", v.Type()))
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

// CheckConfig reports every mistake in a configuration file's text, of
// newsget and of newsget serve, joined in the order of their lines
// (tomlconf.Errors lists them): values of the wrong type, keys it does not
// know and values it refuses together.
func CheckConfig(name string, text []byte) error {
	_, err := parseChecked(name, text, true)
	return err
}
