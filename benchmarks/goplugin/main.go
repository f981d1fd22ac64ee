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
//	goplugin rss FILE ARGV...
//	                       run ARGV (stdin and stdout passed on) and write its peak RSS in
//	                       KiB to FILE: a child spawned by a small static process, so the
//	                       figure is the child's own (a child of a big Python process
//	                       inherits that process's high-water mark until it execs)
//
// Started as docker-credential-<anything> (a symlink), it is that credential helper instead:
// `get` reads a server URL on stdin and answers {"ServerURL", "Username", "Secret"} for it.
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
	"path/filepath"
	"strings"
	"syscall"
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

func credentialHelper() {
	if len(os.Args) != 2 || os.Args[1] != "get" {
		fail("usage: docker-credential-NAME get")
	}
	server, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading the server URL: %v", err)
	}
	out, _ := json.Marshal(map[string]string{
		"ServerURL": strings.TrimSpace(string(server)), "Username": "robot", "Secret": "not-a-real-password",
	})
	os.Stdout.Write(out)
}

func peakRSS() {
	if len(os.Args) < 4 {
		fail("usage: goplugin rss FILE ARGV...")
	}
	cmd := exec.Command(os.Args[3], os.Args[4:]...)
	cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
	if err := cmd.Run(); err != nil {
		fail("%s: %v", os.Args[3], err)
	}
	usage, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fail("no resource usage for %s", os.Args[3])
	}
	if err := os.WriteFile(os.Args[2], []byte(fmt.Sprint(usage.Maxrss)), 0o644); err != nil {
		fail("%v", err)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "rss" {
		peakRSS()
		return
	}
	if strings.HasPrefix(filepath.Base(os.Args[0]), "docker-credential-") {
		credentialHelper()
		return
	}
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
