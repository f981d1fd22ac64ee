// The typed-decoding oracle: a document decoded strictly into a Go type, as apimachinery's
// YAML/JSON serializer does it (sigs.k8s.io/yaml, then sigs.k8s.io/json.UnmarshalStrict).
//
// Cluster object kinds (cluster.go) are decoded leniently, as the API server decodes a body.
//
// One JSON request per line on stdin: {"op": "<type>", "in": base64 YAML or JSON}. One JSON
// answer per line: {"ok": true} or {"ok": false, "err": "..."}, the error as apimachinery
// words it: YAMLToJSON's, the first type error (fatal), else "strict decoding error: " and
// every strict error joined with ", ".
//
// The types mirror the Go API types field for field (json names and Go kinds) for the
// fields credprov reads; those not mirrored are unknown here and so are left out of the
// generated documents.
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Time is metav1.Time's JSON form.
type Time struct{ time.Time }

func (t *Time) UnmarshalJSON(b []byte) error {
	if len(b) == 4 && string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	pt, err := time.Parse(time.RFC3339, str)
	if err != nil {
		return err
	}
	t.Time = pt.Local()
	return nil
}

type TypeMeta struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
}

// kubelet.config.k8s.io/v1beta1

type ImagePullIntent struct {
	TypeMeta `json:",inline"`
	Image    string `json:"image"`
}

type ImagePullSecret struct {
	UID            string `json:"uid"`
	Namespace      string `json:"namespace"`
	Name           string `json:"name"`
	CredentialHash string `json:"credentialHash"`
}

type ImagePullServiceAccount struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

type ImagePullCredentials struct {
	KubernetesSecrets         []ImagePullSecret         `json:"kubernetesSecrets,omitempty"`
	KubernetesServiceAccounts []ImagePullServiceAccount `json:"kubernetesServiceAccounts,omitempty"`
	NodePodsAccessible        bool                      `json:"nodePodsAccessible,omitempty"`
}

type ImagePulledRecord struct {
	TypeMeta          `json:",inline"`
	LastUpdatedTime   Time                            `json:"lastUpdatedTime"`
	ImageRef          string                          `json:"imageRef"`
	CredentialMapping map[string]ImagePullCredentials `json:"credentialMapping,omitempty"`
}

func decode(op string, in []byte) error {
	var into interface{}
	switch op {
	case "ImagePullIntent":
		into = &ImagePullIntent{}
	case "ImagePulledRecord":
		into = &ImagePulledRecord{}
	default:
		t, ok := clusterTypes[op]
		if !ok {
			return fmt.Errorf("BAD REQUEST: unknown type %s", op)
		}
		// The API server's decoding of a body: lenient (unknown and duplicate fields
		// dropped), typed.
		js, err := yaml.YAMLToJSON(in)
		if err != nil {
			return err
		}
		return kjson.UnmarshalCaseSensitivePreserveInts(js, t())
	}
	js, err := yaml.YAMLToJSON(in)
	if err != nil {
		return err
	}
	var strict []string
	if _, err := yaml.YAMLToJSONStrict(in); err != nil {
		strict = append(strict, err.Error())
	}
	strictJSON, err := kjson.UnmarshalStrict(js, into)
	if err != nil {
		return err
	}
	for _, e := range strictJSON {
		strict = append(strict, e.Error())
	}
	if len(strict) > 0 {
		return fmt.Errorf("strict decoding error: %s", strings.Join(strict, ", "))
	}
	return nil
}

type request struct {
	Op string `json:"op"`
	In string `json:"in"`
}

type answer struct {
	OK  bool   `json:"ok"`
	Err string `json:"err,omitempty"`
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
			enc.Encode(answer{Err: "BAD REQUEST: " + err.Error()})
			continue
		}
		in, err := base64.StdEncoding.DecodeString(req.In)
		if err != nil {
			enc.Encode(answer{Err: "BAD REQUEST: " + err.Error()})
			continue
		}
		if err := decode(req.Op, in); err != nil {
			enc.Encode(answer{Err: err.Error()})
		} else {
			enc.Encode(answer{OK: true})
		}
	}
}
