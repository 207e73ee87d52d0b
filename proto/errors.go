package proto

import "fmt"

func errLine(max int) error {
	return fmt.Errorf("nntp: block line longer than %d octets: %w", max, ErrLineTooLong)
}
