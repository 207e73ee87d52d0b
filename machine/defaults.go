package machine

// Default sets *v to def when *v is zero or negative: in every machine's
// Config a limit, a size or a timeout left unset (or nonsensical) means
// the package's default.
func Default[T ~int | ~int32 | ~int64 | ~float64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
