// The YAML oracle: sigs.k8s.io/yaml (go-yaml v2 underneath) as apimachinery calls it.
//
// One JSON request per line on stdin: {"op": "y2j"|"y2js", "in": base64}. One JSON answer
// per line on stdout: {"ok": true, "out": "<the JSON text>"} or {"ok": false, "err": "..."}.
//   y2j   yaml.YAMLToJSON       (what the serializer runs before decoding)
//   y2js  yaml.YAMLToJSONStrict (what strict decoding runs to find duplicate keys)
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
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
	var out []byte
	switch req.Op {
	case "y2j":
		out, err = yaml.YAMLToJSON(in)
	case "y2js":
		out, err = yaml.YAMLToJSONStrict(in)
	default:
		return answer{Err: "BAD REQUEST: unknown op " + req.Op}
	}
	if err != nil {
		return answer{Err: err.Error()}
	}
	return answer{OK: true, Out: string(out)}
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
