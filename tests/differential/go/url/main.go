// The URL oracle: net/url.Parse, net.SplitHostPort and strconv.Quote, as the kubelet's Go
// release runs them (the toolchain that builds this program is the release under test).
//
// One JSON request per line on stdin: {"op": "parse"|"split"|"quote", "in": base64}, or
// {"op": "printable"}. One JSON answer per line; byte strings are base64 (JSON []byte), so
// fields that are not valid UTF-8 survive:
//
//	parse:     {"ok": true, "scheme", "opaque", "host", "path", "rawQuery", "fragment": base64,
//	           "forceQuery": bool, "hasUser": bool} or {"ok": false, "err": base64}
//	split:     {"ok": true, "host", "port": base64} or {"ok": false, "err": base64}
//	quote:     {"ok": true, "out": base64}
//	printable: {"ok": true, "go": runtime.Version(), "unicode": unicode.Version,
//	           "ranges": [[lo, hi], ...]} (the runes strconv.IsPrint accepts)
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"unicode"
)

type request struct {
	Op string `json:"op"`
	In string `json:"in"`
}

type answer struct {
	OK         bool       `json:"ok"`
	Err        []byte     `json:"err,omitempty"`
	Scheme     []byte     `json:"scheme,omitempty"`
	Opaque     []byte     `json:"opaque,omitempty"`
	Host       []byte     `json:"host,omitempty"`
	Port       []byte     `json:"port,omitempty"`
	Path       []byte     `json:"path,omitempty"`
	RawQuery   []byte     `json:"rawQuery,omitempty"`
	Fragment   []byte     `json:"fragment,omitempty"`
	ForceQuery bool       `json:"forceQuery,omitempty"`
	HasUser    bool       `json:"hasUser,omitempty"`
	Out        []byte     `json:"out,omitempty"`
	Go         string     `json:"go,omitempty"`
	Unicode    string     `json:"unicode,omitempty"`
	Ranges     [][2]int32 `json:"ranges,omitempty"`
}

func printable() answer {
	var ranges [][2]int32
	start := int32(-1)
	for r := int32(0); r <= unicode.MaxRune+1; r++ {
		if r <= unicode.MaxRune && strconv.IsPrint(r) {
			if start < 0 {
				start = r
			}
		} else if start >= 0 {
			ranges = append(ranges, [2]int32{start, r - 1})
			start = -1
		}
	}
	return answer{OK: true, Go: runtime.Version(), Unicode: unicode.Version, Ranges: ranges}
}

func handle(req request) answer {
	if req.Op == "printable" {
		return printable()
	}
	raw, err := base64.StdEncoding.DecodeString(req.In)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(2)
	}
	in := string(raw)
	switch req.Op {
	case "parse":
		u, err := url.Parse(in)
		if err != nil {
			return answer{Err: []byte(err.Error())}
		}
		return answer{
			OK: true, Scheme: []byte(u.Scheme), Opaque: []byte(u.Opaque), Host: []byte(u.Host),
			Path: []byte(u.Path), RawQuery: []byte(u.RawQuery), Fragment: []byte(u.Fragment),
			ForceQuery: u.ForceQuery, HasUser: u.User != nil,
		}
	case "split":
		host, port, err := net.SplitHostPort(in)
		if err != nil {
			return answer{Err: []byte(err.Error())}
		}
		return answer{OK: true, Host: []byte(host), Port: []byte(port)}
	case "quote":
		return answer{OK: true, Out: []byte(strconv.Quote(in))}
	}
	fmt.Fprintln(os.Stderr, "bad request op:", req.Op)
	os.Exit(2)
	return answer{}
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
		if err := enc.Encode(handle(req)); err != nil {
			os.Exit(3)
		}
	}
}
