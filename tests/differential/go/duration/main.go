// The duration oracle: time.ParseDuration and Duration.String, as the kubelet runs them.
//
// One JSON request per line on stdin: {"op": "parse", "in": base64}. One JSON answer per
// line: {"ok": true, "ns": <int64>, "out": "<Duration.String()>"} or {"ok": false, "err": "..."}.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

type request struct {
	Op string `json:"op"`
	In string `json:"in"`
}

type answer struct {
	OK  bool   `json:"ok"`
	NS  int64  `json:"ns"`
	Out string `json:"out,omitempty"`
	Err string `json:"err,omitempty"`
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<26)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for scanner.Scan() {
		var req request
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request line:", err)
			os.Exit(2)
		}
		in, err := base64.StdEncoding.DecodeString(req.In)
		if err != nil || req.Op != "parse" {
			fmt.Fprintln(os.Stderr, "bad request:", req.Op, err)
			os.Exit(2)
		}
		d, err := time.ParseDuration(string(in))
		ans := answer{OK: err == nil, NS: int64(d), Out: d.String()}
		if err != nil {
			ans = answer{Err: err.Error()}
		}
		if err := enc.Encode(ans); err != nil {
			os.Exit(3)
		}
	}
}
