// A minimal credential provider plugin in Go: the compiled peer bench_startup.py measures
// credprov's plugins against. It does what a static Go plugin does on every kubelet cache
// miss and nothing more: decode the CredentialProviderRequest with encoding/json, find the
// answer, encode the CredentialProviderResponse.
//
//	goplugin answer FILE   answer from FILE, a JSON object of registry -> {username, password}
//	                       (a static plugin's credentials, or an ECR plugin's cached token)
//	goplugin helper NAME   ask docker-credential-NAME get for the image's registry, as a
//	                       Docker-credential-helper bridge does
//
// Standard library only; built with CGO_ENABLED=0 (a static binary, as cloud plugins ship).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

const group = "credentialprovider.kubelet.k8s.io"

type request struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Image      string `json:"image"`
}

type authConfig struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type response struct {
	Kind          string                `json:"kind"`
	APIVersion    string                `json:"apiVersion"`
	CacheKeyType  string                `json:"cacheKeyType"`
	CacheDuration string                `json:"cacheDuration,omitempty"`
	Auth          map[string]authConfig `json:"auth"`
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "goplugin: "+format+"\n", args...)
	os.Exit(1)
}

func registry(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}

func fromFile(path string) map[string]authConfig {
	data, err := os.ReadFile(path)
	if err != nil {
		fail("%v", err)
	}
	auth := map[string]authConfig{}
	if err := json.Unmarshal(data, &auth); err != nil {
		fail("%s: %v", path, err)
	}
	return auth
}

func fromHelper(name, host string) map[string]authConfig {
	cmd := exec.Command("docker-credential-"+name, "get")
	cmd.Stdin = strings.NewReader(host)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		fail("docker-credential-%s get: %v", name, err)
	}
	var creds struct{ Username, Secret string }
	if err := json.Unmarshal(out.Bytes(), &creds); err != nil {
		fail("docker-credential-%s get: %v", name, err)
	}
	return map[string]authConfig{host: {Username: creds.Username, Password: creds.Secret}}
}

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "answer" && os.Args[1] != "helper") {
		fail("usage: goplugin answer FILE | goplugin helper NAME")
	}
	body, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading the request: %v", err)
	}
	var req request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		fail("decoding the request: %v", err)
	}
	if req.Kind != "CredentialProviderRequest" || !strings.HasPrefix(req.APIVersion, group+"/") {
		fail("not a CredentialProviderRequest: %s %s", req.APIVersion, req.Kind)
	}
	var auth map[string]authConfig
	if os.Args[1] == "answer" {
		auth = fromFile(os.Args[2])
	} else {
		auth = fromHelper(os.Args[2], registry(req.Image))
	}
	resp := response{
		Kind: "CredentialProviderResponse", APIVersion: req.APIVersion,
		CacheKeyType: "Registry", CacheDuration: "1h0m0s", Auth: auth,
	}
	out, err := json.Marshal(resp)
	if err != nil {
		fail("%v", err)
	}
	os.Stdout.Write(out)
}
