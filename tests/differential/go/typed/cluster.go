package main

// clusterTypes: the cluster objects' Go types, by name (see types of cluster.go's callers).
var clusterTypes = map[string]func() interface{}{}
