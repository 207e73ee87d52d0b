package dlqueue

import "testing"

// FuzzAssess: any file name and byte counts give a verdict without
// panicking, and a failing verdict always says why.
func FuzzAssess(f *testing.F) {
	for _, s := range []string{"x.par2", "x.vol00+01.par2", "a.b.VOL127+128.PAR2", "x.vol+.par2", "data.rar"} {
		f.Add(s, int64(1000), int64(10))
	}
	f.Fuzz(func(t *testing.T, name string, bytes, missing int64) {
		v := Assess([]FileDamage{{Name: name, Bytes: bytes, Missing: missing}, {Name: "d", Bytes: 10, Missing: 10}})
		if v.Fail && v.Reason == "" {
			t.Fatalf("%q: fails without a reason: %+v", name, v)
		}
	})
}
