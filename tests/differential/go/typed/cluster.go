package main

// The cluster objects' Go types (k8s.io/api core/v1 and rbac/v1), field for field for the
// fields credprov types (credprov/api/objects.py); UID stands for types.UID.

type UID string

type OwnerReference struct {
	APIVersion         string `json:"apiVersion"`
	Kind               string `json:"kind"`
	Name               string `json:"name"`
	UID                UID    `json:"uid"`
	Controller         *bool  `json:"controller,omitempty"`
	BlockOwnerDeletion *bool  `json:"blockOwnerDeletion,omitempty"`
}

type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	GenerateName               string            `json:"generateName,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        UID               `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Generation                 int64             `json:"generation,omitempty"`
	CreationTimestamp          Time              `json:"creationTimestamp,omitempty"`
	DeletionTimestamp          *Time             `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	OwnerReferences            []OwnerReference  `json:"ownerReferences,omitempty"`
	Finalizers                 []string          `json:"finalizers,omitempty"`
}

type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

type (
	PullPolicy    string
	Protocol      string
	RestartPolicy string
	DNSPolicy     string
	HostPathType  string
	SecretType    string
)

type ContainerPort struct {
	Name          string   `json:"name,omitempty"`
	HostPort      int32    `json:"hostPort,omitempty"`
	ContainerPort int32    `json:"containerPort"`
	Protocol      Protocol `json:"protocol,omitempty"`
	HostIP        string   `json:"hostIP,omitempty"`
}

type Container struct {
	Name                   string          `json:"name"`
	Image                  string          `json:"image,omitempty"`
	Command                []string        `json:"command,omitempty"`
	Args                   []string        `json:"args,omitempty"`
	WorkingDir             string          `json:"workingDir,omitempty"`
	Ports                  []ContainerPort `json:"ports,omitempty"`
	ImagePullPolicy        PullPolicy      `json:"imagePullPolicy,omitempty"`
	Stdin                  bool            `json:"stdin,omitempty"`
	StdinOnce              bool            `json:"stdinOnce,omitempty"`
	TTY                    bool            `json:"tty,omitempty"`
	TerminationMessagePath string          `json:"terminationMessagePath,omitempty"`
}

type EphemeralContainerCommon struct {
	Name                   string          `json:"name"`
	Image                  string          `json:"image,omitempty"`
	Command                []string        `json:"command,omitempty"`
	Args                   []string        `json:"args,omitempty"`
	WorkingDir             string          `json:"workingDir,omitempty"`
	Ports                  []ContainerPort `json:"ports,omitempty"`
	ImagePullPolicy        PullPolicy      `json:"imagePullPolicy,omitempty"`
	Stdin                  bool            `json:"stdin,omitempty"`
	StdinOnce              bool            `json:"stdinOnce,omitempty"`
	TTY                    bool            `json:"tty,omitempty"`
	TerminationMessagePath string          `json:"terminationMessagePath,omitempty"`
}

type EphemeralContainer struct {
	EphemeralContainerCommon `json:",inline"`
	TargetContainerName      string `json:"targetContainerName,omitempty"`
}

type SecretVolumeSource struct {
	SecretName  string      `json:"secretName,omitempty"`
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

type ConfigMapVolumeSource struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	DefaultMode          *int32      `json:"defaultMode,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

type PersistentVolumeClaimVolumeSource struct {
	ClaimName string `json:"claimName"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type SecretProjection struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

type ConfigMapProjection struct {
	LocalObjectReference `json:",inline"`
	Items                []KeyToPath `json:"items,omitempty"`
	Optional             *bool       `json:"optional,omitempty"`
}

type ServiceAccountTokenProjection struct {
	Audience          string `json:"audience,omitempty"`
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
	Path              string `json:"path"`
}

type VolumeProjection struct {
	Secret              *SecretProjection              `json:"secret,omitempty"`
	ConfigMap           *ConfigMapProjection           `json:"configMap,omitempty"`
	ServiceAccountToken *ServiceAccountTokenProjection `json:"serviceAccountToken,omitempty"`
}

type ProjectedVolumeSource struct {
	Sources     []VolumeProjection `json:"sources"`
	DefaultMode *int32             `json:"defaultMode,omitempty"`
}

type CSIVolumeSource struct {
	Driver               string                `json:"driver"`
	ReadOnly             *bool                 `json:"readOnly,omitempty"`
	FSType               *string               `json:"fsType,omitempty"`
	VolumeAttributes     map[string]string     `json:"volumeAttributes,omitempty"`
	NodePublishSecretRef *LocalObjectReference `json:"nodePublishSecretRef,omitempty"`
}

type ImageVolumeSource struct {
	Reference  string     `json:"reference,omitempty"`
	PullPolicy PullPolicy `json:"pullPolicy,omitempty"`
}

type HostPathVolumeSource struct {
	Path string        `json:"path"`
	Type *HostPathType `json:"type,omitempty"`
}

type VolumeSource struct {
	Secret                *SecretVolumeSource                `json:"secret,omitempty"`
	ConfigMap             *ConfigMapVolumeSource             `json:"configMap,omitempty"`
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	Projected             *ProjectedVolumeSource             `json:"projected,omitempty"`
	CSI                   *CSIVolumeSource                   `json:"csi,omitempty"`
	Image                 *ImageVolumeSource                 `json:"image,omitempty"`
	HostPath              *HostPathVolumeSource              `json:"hostPath,omitempty"`
}

type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

type PodSpec struct {
	Volumes                       []Volume               `json:"volumes,omitempty"`
	InitContainers                []Container            `json:"initContainers,omitempty"`
	Containers                    []Container            `json:"containers"`
	EphemeralContainers           []EphemeralContainer   `json:"ephemeralContainers,omitempty"`
	RestartPolicy                 RestartPolicy          `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64                 `json:"terminationGracePeriodSeconds,omitempty"`
	ActiveDeadlineSeconds         *int64                 `json:"activeDeadlineSeconds,omitempty"`
	DNSPolicy                     DNSPolicy              `json:"dnsPolicy,omitempty"`
	NodeSelector                  map[string]string      `json:"nodeSelector,omitempty"`
	ServiceAccountName            string                 `json:"serviceAccountName,omitempty"`
	DeprecatedServiceAccount      string                 `json:"serviceAccount,omitempty"`
	AutomountServiceAccountToken  *bool                  `json:"automountServiceAccountToken,omitempty"`
	NodeName                      string                 `json:"nodeName,omitempty"`
	HostNetwork                   bool                   `json:"hostNetwork,omitempty"`
	HostPID                       bool                   `json:"hostPID,omitempty"`
	HostIPC                       bool                   `json:"hostIPC,omitempty"`
	ShareProcessNamespace         *bool                  `json:"shareProcessNamespace,omitempty"`
	ImagePullSecrets              []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	Hostname                      string                 `json:"hostname,omitempty"`
	Subdomain                     string                 `json:"subdomain,omitempty"`
	SchedulerName                 string                 `json:"schedulerName,omitempty"`
	PriorityClassName             string                 `json:"priorityClassName,omitempty"`
	Priority                      *int32                 `json:"priority,omitempty"`
	RuntimeClassName              *string                `json:"runtimeClassName,omitempty"`
	EnableServiceLinks            *bool                  `json:"enableServiceLinks,omitempty"`
	HostUsers                     *bool                  `json:"hostUsers,omitempty"`
}

type Pod struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       PodSpec `json:"spec,omitempty"`
}

type Secret struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Immutable  *bool             `json:"immutable,omitempty"`
	Data       map[string][]byte `json:"data,omitempty"`
	StringData map[string]string `json:"stringData,omitempty"`
	Type       SecretType        `json:"type,omitempty"`
}

type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             UID    `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

type ServiceAccount struct {
	TypeMeta                     `json:",inline"`
	ObjectMeta                   `json:"metadata,omitempty"`
	Secrets                      []ObjectReference      `json:"secrets,omitempty"`
	ImagePullSecrets             []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	AutomountServiceAccountToken *bool                  `json:"automountServiceAccountToken,omitempty"`
}

type NodeSpec struct {
	PodCIDR       string   `json:"podCIDR,omitempty"`
	PodCIDRs      []string `json:"podCIDRs,omitempty"`
	ProviderID    string   `json:"providerID,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
}

type Node struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Spec       NodeSpec `json:"spec,omitempty"`
}

type PolicyRule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

type Role struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
}

type ClusterRole struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Rules      []PolicyRule `json:"rules"`
}

type RoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

type ClusterRoleBinding struct {
	TypeMeta   `json:",inline"`
	ObjectMeta `json:"metadata,omitempty"`
	Subjects   []Subject `json:"subjects,omitempty"`
	RoleRef    RoleRef   `json:"roleRef"`
}

// clusterTypes: the Go type of each kind, decoded leniently as the API server does
// (op "lenient:<Kind>").
var clusterTypes = map[string]func() interface{}{
	"Pod":                func() interface{} { return &Pod{} },
	"Secret":             func() interface{} { return &Secret{} },
	"ServiceAccount":     func() interface{} { return &ServiceAccount{} },
	"Node":               func() interface{} { return &Node{} },
	"Role":               func() interface{} { return &Role{} },
	"ClusterRole":        func() interface{} { return &ClusterRole{} },
	"RoleBinding":        func() interface{} { return &RoleBinding{} },
	"ClusterRoleBinding": func() interface{} { return &ClusterRoleBinding{} },
}
