package par2

import (
	"fmt"

	"github.com/newsflow/newsflow/proto/gf16"
)

// MaxMissing bounds the input slices one repair may rebuild: the matrix is
// k*k words and its inversion k^3 multiplications (4096: 32 MiB, seconds).
const MaxMissing = 4096

// A Plan says how to rebuild missing input slices. With D the input
// slices, R_e the recovery slice of exponent e and c_i = Constant(i):
//
//	R_e = sum over all i of c_i^e * D_i                        (spec)
//	S_j = R_{e_j} + sum over present i of c_i^{e_j} * D_i      (syndrome)
//	    = sum over missing m of c_m^{e_j} * D_m  =  (A D_missing)_j
//	D_missing = Inverse * S
//
// (addition is xor). The runtime accumulates the syndromes S_j from the
// present slices, then multiplies them by Inverse.
type Plan struct {
	Missing []int      // input slice indices to rebuild, ascending
	Use     []Recovery // recovery slices used, one per missing slice
	Inverse [][]uint16 // Inverse[m][j]: factor of S_j in D_{Missing[m]}
}

// Plan chooses recovery slices for the missing input slices (ascending
// indices) and inverts the matrix. When a choice is singular (PAR 2.0's
// matrix is not always invertible) it moves on to the next exponents.
func (s *Set) Plan(missing []int) (*Plan, error) {
	k := len(missing)
	if k == 0 {
		return &Plan{}, nil
	}
	if k > MaxMissing {
		return nil, fmt.Errorf("par2: %d slices to rebuild, limit %d", k, MaxMissing)
	}
	if k > len(s.Recovery) {
		return nil, fmt.Errorf("par2: %d slices missing, only %d recovery slices: need %d more", k, len(s.Recovery), k-len(s.Recovery))
	}
	var err error
	for start := 0; start+k <= len(s.Recovery) && start < 8; start++ {
		use := s.Recovery[start : start+k]
		exps := make([]uint32, k)
		for j, r := range use {
			exps[j] = r.Exponent
		}
		var inv [][]uint16
		inv, err = Invert(missing, exps)
		if err == nil {
			return &Plan{Missing: missing, Use: use, Inverse: inv}, nil
		}
	}
	return nil, err
}

// Invert returns the inverse of A[j][m] = Constant(missing[m])^exps[j], by
// Gauss–Jordan elimination in GF(2^16), indexed [m][j].
func Invert(missing []int, exps []uint32) ([][]uint16, error) {
	k := len(missing)
	if len(exps) != k {
		return nil, fmt.Errorf("par2: %d exponents for %d missing slices", len(exps), k)
	}
	// a is [A | I], row j for exponent j.
	a := make([][]uint16, k)
	for j := range a {
		a[j] = make([]uint16, 2*k)
		for m, i := range missing {
			if i < 0 || i >= MaxSlices {
				return nil, fmt.Errorf("par2: slice index %d out of range", i)
			}
			a[j][m] = Coefficient(i, exps[j])
		}
		a[j][k+j] = 1
	}
	for col := 0; col < k; col++ {
		p := col
		for p < k && a[p][col] == 0 {
			p++
		}
		if p == k {
			return nil, fmt.Errorf("par2: recovery matrix is singular for these %d slices", k)
		}
		a[col], a[p] = a[p], a[col]
		if f := gf16.Inv(a[col][col]); f != 1 {
			for x := range a[col] {
				a[col][x] = gf16.Mul(a[col][x], f)
			}
		}
		for r := 0; r < k; r++ {
			if f := a[r][col]; r != col && f != 0 {
				row, pr := a[r], a[col]
				for x := col; x < 2*k; x++ {
					row[x] ^= gf16.Mul(f, pr[x])
				}
			}
		}
	}
	// The right half is A^-1 indexed [m][j] since row m of the reduced
	// system solves for unknown m.
	inv := make([][]uint16, k)
	for m := range inv {
		inv[m] = a[m][k:]
	}
	return inv, nil
}
