package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestGetSmall runs newsbench get on a tiny NZB from nntptest with the
// competitor missing: newsget's row is there, the skip is explained, and
// no ratio line is made up.
func TestGetSmall(t *testing.T) {
	var out, errb bytes.Buffer
	err := benchGet([]string{"-server", "nntptest", "-size", "2", "-part", "100", "-files", "2", "-rounds", "1",
		"-nzbget", "/nonexistent/nzbget"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !regexp.MustCompile(`(?m)^get-2M-100k\s+newsget\s+nntptest\s+[\d.]+\s+[\d.]+`).MatchString(out.String()) {
		t.Errorf("no newsget row:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "NZBGet skipped: /nonexistent/nzbget not found (install it with: apt-get install nzbget)") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	if strings.Contains(out.String(), "ratio ") {
		t.Errorf("ratio line without a competitor:\n%s", out.String())
	}
}

// TestYencSmall: the decoder row, and a clear skip without sabyenc.
func TestYencSmall(t *testing.T) {
	var out, errb bytes.Buffer
	if err := benchYenc([]string{"-size", "64", "-rounds", "2", "-python", "/nonexistent/python3"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^yenc-64k\s+newsflow\s+[\d.]+\s+[\d.]+`).MatchString(out.String()) {
		t.Errorf("no newsflow row:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "sabyenc skipped") || strings.Contains(out.String(), "ratio ") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
}

// TestGetUnpackSmall runs newsbench get-unpack on a tiny release: a row
// per case and round, the least and median of each, the load average and
// the ratio line.
func TestGetUnpackSmall(t *testing.T) {
	var out, errb bytes.Buffer
	if err := benchGetUnpack([]string{"-size", "2", "-volumes", "4", "-part", "100", "-connections", "2", "-rounds", "1"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, re := range []string{`(?m)^false\s+1\s+[\d.]+\s+[\d.]+$`, `(?m)^true\s+1\s+[\d.]+\s+[\d.]+$`,
		`(?m)^  with direct unpack: +min [\d.]+ s, median [\d.]+ s$`, `(?m)^  load average before `,
		`(?m)^ratio get-unpack-2M-4vol time [\d.]+$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("no match for %s:\n%s", re, out.String())
		}
	}
}
