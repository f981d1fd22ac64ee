// The JSON oracle: encoding/json and sigs.k8s.io/json as apimachinery and the kubelet call them.
//
// One JSON request per line on stdin: {"op": ..., "in": base64}. One JSON answer per line:
// {"ok": true, "out": "..."} or {"ok": false, "err": "..."}.
//
//	json       json.Unmarshal into interface{}; out is the value decoded with UseNumber,
//	           written back with json.Marshal (numbers as their literal text)
//	kjson      sigs.k8s.io/json.UnmarshalCaseSensitivePreserveInts into interface{}
//	interpret  json.Unmarshal into the struct apimachinery's json.DefaultMetaFactory.Interpret
//	           reads (apiVersion, kind); out is "apiVersion\x00kind"
//	isjson     the recognizer's test: the first non-space rune (unicode.IsSpace) is '{'
//	offset     the byte offset of the syntax error json.Unmarshal reports
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"unicode"

	kjson "sigs.k8s.io/json"
)

type request struct {
	Op string `json:"op"`
	In string `json:"in"`
}

type answer struct {
	OK  bool   `json:"ok"`
	Out string `json:"out,omitempty"`
	Err string `json:"err,omitempty"`
}

func marshal(v interface{}) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func run(req request) (ans answer) {
	defer func() {
		if r := recover(); r != nil {
			ans = answer{Err: fmt.Sprintf("PANIC: %v", r)}
		}
	}()
	in, err := base64.StdEncoding.DecodeString(req.In)
	if err != nil {
		return answer{Err: "BAD REQUEST: " + err.Error()}
	}
	switch req.Op {
	case "json":
		var v interface{}
		if err := json.Unmarshal(in, &v); err != nil {
			return answer{Err: err.Error()}
		}
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var n interface{}
		if err := dec.Decode(&n); err != nil {
			return answer{Err: "ORACLE: " + err.Error()}
		}
		out, err := marshal(n)
		if err != nil {
			return answer{Err: "ORACLE: " + err.Error()}
		}
		return answer{OK: true, Out: out}
	case "kjson":
		var v interface{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(in, &v); err != nil {
			return answer{Err: err.Error()}
		}
		out, err := marshal(v)
		if err != nil {
			return answer{Err: "ORACLE: " + err.Error()}
		}
		return answer{OK: true, Out: out}
	case "interpret":
		var found struct {
			APIVersion string `json:"apiVersion,omitempty"`
			Kind       string `json:"kind,omitempty"`
		}
		if err := json.Unmarshal(in, &found); err != nil {
			return answer{Err: err.Error()}
		}
		return answer{OK: true, Out: found.APIVersion + "\x00" + found.Kind}
	case "isjson":
		trimmed := bytes.TrimLeftFunc(in, unicode.IsSpace)
		return answer{OK: bytes.HasPrefix(trimmed, []byte("{"))}
	case "offset":
		var v interface{}
		err := json.Unmarshal(in, &v)
		if serr, ok := err.(*json.SyntaxError); ok {
			return answer{OK: true, Out: fmt.Sprint(serr.Offset)}
		}
		return answer{OK: false}
	default:
		return answer{Err: "BAD REQUEST: unknown op " + req.Op}
	}
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<30)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for scanner.Scan() {
		var req request
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request line:", err)
			os.Exit(2)
		}
		if err := enc.Encode(run(req)); err != nil {
			os.Exit(3)
		}
	}
}
