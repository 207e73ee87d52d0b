package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/newsflow/newsflow/runtime/newsfeed"
	"github.com/newsflow/newsflow/runtime/tomlconf"
)

// report prints the summary of the last -since (24h): per peer, per
// feeder, the top rejection reasons, backlog peaks and lost articles, from
// the article log, as innreport does for INN.
func report(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("newsfeed report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "configuration `file` (its article_log)")
	since := fs.String("since", "24h", "the `duration` the report covers, up to now (\"24h\", \"7d\")")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: newsfeed report [-config FILE] [-since DURATION] [-json]")
		return 2
	}
	d, err := tomlconf.ParseDuration(*since)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%q is not a duration after 0 (want e.g. \"24h\", \"7d\")", *since)
	}
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed report: -since: %v\n", err)
		return 2
	}
	cfg, err := newsfeed.LoadConfig(*config)
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed report: %v\n", err)
		return 2
	}
	now := time.Now()
	rep, err := newsfeed.BuildReport(cfg, now.Add(-d), now.Add(time.Second))
	if err != nil {
		fmt.Fprintf(stderr, "newsfeed report: %v\n", err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
		return 0
	}
	printReport(stdout, rep)
	return 0
}

func printReport(w io.Writer, rep newsfeed.Report) {
	const ts = "2006-01-02 15:04"
	fmt.Fprintf(w, "newsfeed report %s to %s UTC, %d run(s), from %s\n\n", rep.Since.UTC().Format(ts), rep.Until.UTC().Format(ts), rep.Runs, rep.Log)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PEER\tOFFERED\tACCEPTED\tREFUSED\tREJECTED\tDEFERRED\tDROPPED\tMISSING\tTOO OLD\tLOST\tBYTES\tAVG LATENCY\tBACKLOG PEAK\tQUEUED\t")
	for _, p := range rep.Peers {
		// No answer timed: "-", not a latency of 0.
		lat := "-"
		if p.LatencySamples > 0 {
			lat = fmt.Sprintf("%.3fs", p.AvgLatency)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t\n", p.Name, p.Offered, p.Accepted, p.Refused,
			p.Rejected, p.Deferred, p.Dropped, p.Missing, p.TooOld, p.Lost, p.Bytes, lat, p.BacklogPeak, p.Queued)
	}
	tw.Flush()
	if len(rep.Peers) == 0 {
		fmt.Fprintln(w, "no peer stats in the window (stats lines come every stats_interval and at the stop)")
	}
	fmt.Fprintf(w, "answers not in the latency (their arrival is not in the log: before its oldest file, or lost by a killed run): %d\n", rep.Unpaired)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FEEDER\tOFFERED\tACCEPTED\tREFUSED\tREJECTED\tDEFERRED\tBYTES\t")
	for _, f := range rep.Feeders {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", f.Name, f.Offered, f.Accepted, f.Refused, f.Rejected, f.Deferred, f.Bytes)
	}
	tw.Flush()
	if len(rep.Reasons) > 0 {
		fmt.Fprintln(w, "\ntop rejection reasons:")
		for _, r := range rep.Reasons {
			fmt.Fprintf(w, "%8d  %s: %s\n", r.Count, r.Source, r.Reason)
		}
	}
	fmt.Fprintf(w, "\nlost articles (damaged or gone in the spool): %d\n", rep.Lost)
}
