package cluster

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ackSeeds are acknowledgements as nats-server 2.15 writes them, and
// damaged ones.
var ackSeeds = []string{
	`{"stream":"newsflow-art-2", "seq":12}`,
	`{"stream":"newsflow-art-2","domain":"hub", "seq":12}`,
	`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 5"},"stream":"newsflow-art-0","seq":0}`,
	`{"error":{"code":400,"err_code":10164,"description":"wrong last sequence"}}`,
	`{"error":{"code":503,"err_code":10077,"description":"JetStream system temporarily unavailable"}}`,
	`{"type":"io.nats.jetstream.api.v1.pub_ack"}`,
	`{"stream":`,
	`{"error":`,
	`not json`,
}

// TestParseAck: success, a duplicate (wrong last subject sequence), no
// responders, and what is not an acknowledgement.
func TestParseAck(t *testing.T) {
	ok := &nats.Msg{Data: []byte(ackSeeds[0])}
	if err := parseAck(ok); err != nil {
		t.Errorf("success: %v", err)
	}
	dup := &nats.Msg{Data: []byte(ackSeeds[2])}
	if err := parseAck(dup); !isWrongLastSeq(err) {
		t.Errorf("wrong last sequence: %v, want the API error 10071", err)
	}
	none := &nats.Msg{Header: nats.Header{"Status": []string{"503"}}}
	if err := parseAck(none); !errors.Is(err, errNoResponders) {
		t.Errorf("no responders: %v", err)
	}
	for _, bad := range []string{`{"type":"io.nats.jetstream.api.v1.pub_ack"}`, `{"error":`, `not json`, `{"error":null,"stream":"x"}`,
		`{"stream":""}`, // FuzzParseAck: a stream with no name was taken for success
	} {
		if err := parseAck(&nats.Msg{Data: []byte(bad)}); err == nil {
			t.Errorf("%s: taken for a successful acknowledgement", bad)
		}
	}
}

// FuzzParseAck: parseAck agrees with encoding/json (nats.go's decoding of
// acknowledgements) on everything that decodes: a stream and no error is
// success, an error is that error, with its code.
func FuzzParseAck(f *testing.F) {
	for _, s := range ackSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := parseAck(&nats.Msg{Data: data})
		var ref struct {
			Stream string              `json:"stream"`
			Error  *jetstream.APIError `json:"error"`
		}
		if len(data) == 0 || json.Unmarshal(data, &ref) != nil {
			return // parseAck only has to say something
		}
		switch {
		case ref.Error != nil:
			var api *jetstream.APIError
			if !errors.As(got, &api) || api.ErrorCode != ref.Error.ErrorCode || api.Code != ref.Error.Code {
				t.Fatalf("parseAck(%q) = %v, want the API error %+v", data, got, ref.Error)
			}
		case ref.Stream != "" && got != nil:
			// A success is recognised by its beginning; the server
			// writes {"stream": first.
			var first map[string]json.RawMessage
			if json.Unmarshal(data, &first) == nil && len(data) > 10 && string(data[:10]) == `{"stream":` {
				t.Fatalf("parseAck(%q) = %v, want success", data, got)
			}
		case ref.Stream == "" && got == nil:
			t.Fatalf("parseAck(%q) = success without a stream", data)
		}
	})
}
