"""NodeRestriction on certificates.k8s.io: kubelet CSRs and PodCertificateRequests."""

from __future__ import annotations

import base64
import dataclasses
import subprocess
import sys
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from credprov.nodeauth.admission import AdmissionError, AdmissionRequest, NodeRestriction
from credprov.nodeauth.types import Attributes, Decision
from tests.unit.nodeauth.admission_fixtures import (
    NODE_GROUPS,
    NODE_USER,
    BrokenObjects,
    Objects,
    forbidden,
    node,
    outcome,
    pod,
    request,
)

SERVING = "kubernetes.io/kubelet-serving"
CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
OTHER_SIGNER = "kubernetes.io/kube-apiserver-client"

_KEY = ec.generate_private_key(ec.SECP256R1())


def csr_pem(*common_names: str) -> bytes:
    """A PEM CSR whose subject has the given CN attributes, in order."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn) for cn in common_names])
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(_KEY, hashes.SHA256())
    return csr.public_bytes(serialization.Encoding.PEM)


def csr_request(
    pem: bytes | str, signer: str = SERVING, op: str = "CREATE", **kw: Any
) -> AdmissionRequest:
    body = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr-1"},
        # The JSON form of a []byte field is base64 text.
        "spec": {
            "request": base64.b64encode(pem).decode() if isinstance(pem, bytes) else pem,
            "signerName": signer,
        },
    }
    return request(op, "certificatesigningrequests", obj=body, group="certificates.k8s.io", **kw)


WRONG_CN = forbidden("can only create a node CSR with CN=system:node:mynode")
EMPTY_PEM = b"-----BEGIN CERTIFICATE REQUEST-----\n-----END CERTIFICATE REQUEST-----"


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        pytest.param(csr_request(csr_pem("system:node:mynode")), None, id="serving, own node"),
        pytest.param(
            csr_request(csr_pem("system:node:mynode"), CLIENT), None, id="client, own node"
        ),
        pytest.param(
            csr_request(csr_pem("some-other-identity"), OTHER_SIGNER),
            None,
            id="non-node signer",
        ),
        pytest.param(
            csr_request(csr_pem("system:node:othernode")), WRONG_CN, id="serving, other node"
        ),
        pytest.param(
            csr_request(csr_pem("system:node:othernode"), CLIENT), WRONG_CN, id="client, other node"
        ),
        pytest.param(csr_request(csr_pem()), WRONG_CN, id="no common name"),
        pytest.param(
            csr_request(csr_pem("system:node:othernode", "system:node:mynode")),
            None,
            id="the last CN counts",
        ),
        pytest.param(
            csr_request(csr_pem("system:node:mynode", "system:node:othernode")),
            WRONG_CN,
            id="the last CN counts, other node",
        ),
        pytest.param(
            csr_request(csr_pem("system:node:mynode").decode()),
            None,
            id="raw PEM text instead of base64",
        ),
        pytest.param(
            csr_request(b"junk before\n" + csr_pem("system:node:mynode")),
            None,
            id="text before the PEM block",
        ),
        pytest.param(
            csr_request(EMPTY_PEM),
            forbidden("unable to parse csr: asn1: syntax error: sequence truncated"),
            id="empty CSR",
        ),
        pytest.param(
            csr_request(b"not a pem"),
            forbidden("unable to parse csr: PEM block type must be CERTIFICATE REQUEST"),
            id="not PEM",
        ),
        pytest.param(
            csr_request(
                csr_pem("system:node:mynode").replace(b"CERTIFICATE REQUEST", b"CERTIFICATE")
            ),
            forbidden("unable to parse csr: PEM block type must be CERTIFICATE REQUEST"),
            id="another PEM type",
        ),
        pytest.param(
            csr_request(csr_pem("system:node:othernode"), op="UPDATE", name="csr-1"),
            None,
            id="update is not checked",
        ),
    ],
)
def test_kubelet_csrs(req: AdmissionRequest, expected: tuple[str, str] | None) -> None:
    assert outcome(NodeRestriction(Objects()), req) == expected


def test_csr_garbage_der() -> None:
    pem = b"-----BEGIN CERTIFICATE REQUEST-----\nAAEC\n-----END CERTIFICATE REQUEST-----\n"
    result = outcome(NodeRestriction(Objects()), csr_request(pem))
    assert result is not None
    assert result[0] == "Forbidden"
    assert result[1].startswith("unable to parse csr: x509: ")


def test_insecure_kubelet_csrs_gate() -> None:
    plugin = NodeRestriction(
        Objects(), feature_gates={"AllowInsecureKubeletCertificateSigningRequests": True}
    )
    assert outcome(plugin, csr_request(csr_pem("system:node:othernode"))) is None
    assert outcome(plugin, csr_request(b"not a pem")) is None


def test_csr_apiserver_message() -> None:
    with pytest.raises(AdmissionError) as info:
        NodeRestriction(Objects()).admit(csr_request(csr_pem("system:node:othernode")))
    assert str(info.value) == (
        'certificatesigningrequests.certificates.k8s.io "csr-1" is forbidden: can only create a '
        "node CSR with CN=system:node:mynode"
    )


# -- PodCertificateRequests ------------------------------------------------------------------

SA = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "default", "namespace": "ns", "uid": "sa-uid"},
}
SIGNER = "example.com/signer"


def cert_volume(*signers: str) -> dict[str, Any]:
    """A projected volume with one ``podCertificate`` source per signer."""
    return {
        "name": "certs",
        "projected": {
            "sources": [
                {"podCertificate": {"signerName": signer, "keyType": "ED25519"}}
                for signer in signers
            ]
        },
    }


PCR_OBJECTS = Objects(
    [
        node(),
        SA,
        pod("mypod", serviceAccountName="default", volumes=[cert_volume(SIGNER)]),
        pod("otherpod", "othernode", serviceAccountName="default"),
        pod("mirrorpod", mirror=True, serviceAccountName="default"),
    ]
)


def pcr(**overrides: str) -> dict[str, Any]:
    spec = {
        "signerName": SIGNER,
        "podName": "mypod",
        "podUID": "pod-uid",
        "serviceAccountName": "default",
        "serviceAccountUID": "sa-uid",
        "nodeName": "mynode",
        "nodeUID": "mynode-uid",
        "pkixPublicKey": "AAAA",
        "proofOfPossession": "AAAA",
    }
    spec.update(overrides)
    return {
        "apiVersion": "certificates.k8s.io/v1beta1",
        "kind": "PodCertificateRequest",
        "metadata": {"name": "pcr-1", "namespace": "ns"},
        "spec": spec,
    }


def pcr_request(body: dict[str, Any] | None, op: str = "CREATE", sub: str = "") -> AdmissionRequest:
    return request(
        op,
        "podcertificaterequests",
        obj=body,
        name="pcr-1",
        namespace="ns",
        subresource=sub,
        group="certificates.k8s.io",
    )


def plain(message: str) -> tuple[str, str]:
    return "InternalError", message


@pytest.mark.parametrize(
    ("req", "objects", "expected"),
    [
        pytest.param(pcr_request(pcr()), PCR_OBJECTS, None, id="own pod"),
        pytest.param(
            pcr_request(pcr(), op="UPDATE"),
            PCR_OBJECTS,
            forbidden("unexpected operation UPDATE"),
            id="update",
        ),
        pytest.param(
            pcr_request(pcr(), op="DELETE"),
            PCR_OBJECTS,
            forbidden("unexpected operation DELETE"),
            id="delete",
        ),
        pytest.param(
            pcr_request(pcr(), sub="status"),
            PCR_OBJECTS,
            forbidden("unexpected subresource status"),
            id="status subresource",
        ),
        pytest.param(
            pcr_request(None), PCR_OBJECTS, forbidden("unexpected type <nil>"), id="no object"
        ),
        pytest.param(
            pcr_request(pcr(nodeName="othernode")),
            PCR_OBJECTS,
            forbidden(
                'PodCertificateRequest.Spec.NodeName="othernode", which is not the requesting '
                'node "mynode"'
            ),
            id="other node named",
        ),
        pytest.param(
            pcr_request(pcr()),
            Objects(
                [SA, pod("mypod", serviceAccountName="default", volumes=[cert_volume(SIGNER)])]
            ),
            plain(
                'while retrieving node "mynode" named in the PodCertificateRequest: node "mynode" '
                "not found"
            ),
            id="node not found",
        ),
        pytest.param(
            pcr_request(pcr()),
            BrokenObjects(),
            forbidden(
                'while retrieving node "mynode" named in the PodCertificateRequest: '
                "RuntimeError: boom"
            ),
            id="node lookup fails",
        ),
        pytest.param(
            pcr_request(pcr(nodeUID="stale")),
            PCR_OBJECTS,
            plain(
                'PodCertificateRequest for pod "ns/mypod" names node UID "stale", inconsistent '
                'with the running node ("mynode-uid")'
            ),
            id="node UID mismatch",
        ),
        pytest.param(
            pcr_request(pcr(podName="nopod")),
            PCR_OBJECTS,
            plain(
                'while retrieving pod "ns/nopod" named in the PodCertificateRequest: pod "nopod" '
                "not found"
            ),
            id="pod not found",
        ),
        pytest.param(
            pcr_request(pcr(podUID="stale")),
            PCR_OBJECTS,
            plain(
                'PodCertificateRequest for pod "ns/mypod" contains pod UID ("stale") which '
                'differs from running pod "pod-uid"'
            ),
            id="pod UID mismatch",
        ),
        pytest.param(
            pcr_request(pcr(podName="otherpod")),
            PCR_OBJECTS,
            forbidden(
                'pod "ns/otherpod" is not running on node "mynode" named in the '
                "PodCertificateRequest"
            ),
            id="pod on another node",
        ),
        pytest.param(
            pcr_request(pcr(podName="mirrorpod")),
            PCR_OBJECTS,
            forbidden('pod "ns/mirrorpod" is a mirror pod'),
            id="mirror pod",
        ),
        pytest.param(
            pcr_request(pcr(serviceAccountName="other")),
            PCR_OBJECTS,
            forbidden(
                'PodCertificateRequest for pod "ns/mypod" contains serviceAccountName ("other") '
                'that differs from running pod ("default")'
            ),
            id="service account name mismatch",
        ),
        pytest.param(
            pcr_request(pcr()),
            Objects([node(), pod("mypod", serviceAccountName="default")]),
            plain(
                'while retrieving service account "ns/default" named in the '
                'PodCertificateRequest: serviceaccount "default" not found'
            ),
            id="service account not found",
        ),
        pytest.param(
            pcr_request(pcr(serviceAccountUID="stale")),
            PCR_OBJECTS,
            plain(
                'PodCertificateRequest for pod "ns/mypod" names service account UID "stale", '
                'which differs from the running service account ("sa-uid")'
            ),
            id="service account UID mismatch",
        ),
    ],
)
def test_pod_certificate_requests(
    req: AdmissionRequest, objects: Any, expected: tuple[str, str] | None
) -> None:
    plugin = NodeRestriction(objects, feature_gates={"PodCertificateRequest": True})
    assert outcome(plugin, req) == expected


class SignerAuthorizer:
    """Allows the given (signer, service account) pairs for the signer verb; records calls."""

    def __init__(self, *allowed: tuple[str, str], error: Exception | None = None) -> None:
        self.allowed = set(allowed)
        self.error = error
        self.calls: list[Attributes] = []

    def __call__(self, attrs: Attributes) -> Decision:
        self.calls.append(attrs)
        if self.error is not None:
            raise self.error
        if attrs.verb == "request-podcertificate-signer" and (
            (attrs.resource, attrs.name) in self.allowed
        ):
            return Decision.allow("RBAC: allowed")
        return Decision.no_opinion()


OTHER = "other.example.com/signer"


def _signer_objects(*volumes: dict[str, Any]) -> Objects:
    return Objects([node(), SA, pod("mypod", serviceAccountName="default", volumes=list(volumes))])


def not_authorized_signer(signer: str) -> tuple[str, str]:
    return forbidden(
        f'{NODE_USER} is not authorized to request pod certificates from signer "{signer}"'
    )


@pytest.mark.parametrize(
    ("signer", "objects", "authz", "expected"),
    [
        pytest.param(SIGNER, PCR_OBJECTS, None, None, id="signer of a podCertificate volume"),
        pytest.param(
            OTHER,
            _signer_objects(cert_volume(SIGNER, OTHER)),
            None,
            None,
            id="second source of a projected volume",
        ),
        pytest.param(
            OTHER,
            _signer_objects(
                cert_volume(SIGNER),
                {
                    "name": "t",
                    "projected": {"sources": [{"podCertificate": {"signerName": OTHER}}]},
                },
            ),
            None,
            None,
            id="another volume",
        ),
        pytest.param(OTHER, PCR_OBJECTS, None, not_authorized_signer(OTHER), id="unused signer"),
        pytest.param(
            SIGNER,
            _signer_objects(),
            None,
            not_authorized_signer(SIGNER),
            id="pod without volumes",
        ),
        pytest.param(
            SIGNER,
            _signer_objects({"name": "s", "secret": {"secretName": SIGNER}}),
            None,
            not_authorized_signer(SIGNER),
            id="the name elsewhere in the pod does not count",
        ),
        pytest.param(
            OTHER,
            PCR_OBJECTS,
            SignerAuthorizer((OTHER, "default")),
            None,
            id="granted by the authorizer",
        ),
        pytest.param(
            OTHER,
            PCR_OBJECTS,
            SignerAuthorizer((OTHER, "someone-else")),
            not_authorized_signer(OTHER),
            id="granted for another service account",
        ),
        pytest.param(
            OTHER,
            PCR_OBJECTS,
            SignerAuthorizer((SIGNER, "default")),
            not_authorized_signer(OTHER),
            id="granted another signer",
        ),
        pytest.param(
            OTHER,
            PCR_OBJECTS,
            SignerAuthorizer(error=RuntimeError("webhook down")),
            forbidden(
                f"error authorizing {NODE_USER} to request pod certificates from signer "
                f'"{OTHER}": webhook down'
            ),
            id="authorizer error",
        ),
    ],
)
def test_pod_certificate_signer(
    signer: str, objects: Objects, authz: SignerAuthorizer | None, expected: Any
) -> None:
    """1.37 (kubernetes#140006): a node may only name a signer the pod mounts a
    podCertificate volume for, or one it is granted ``request-podcertificate-signer`` on."""
    if authz is not None:
        authz.calls.clear()
    plugin = NodeRestriction(
        objects, feature_gates={"PodCertificateRequest": True}, authorizer=authz
    )
    assert outcome(plugin, pcr_request(pcr(signerName=signer))) == expected


def test_pod_certificate_signer_authorizer_attributes() -> None:
    authz = SignerAuthorizer()
    plugin = NodeRestriction(
        PCR_OBJECTS, feature_gates={"PodCertificateRequest": True}, authorizer=authz
    )
    assert outcome(plugin, pcr_request(pcr())) is None
    assert authz.calls == []  # a mounted signer needs no grant
    req = dataclasses.replace(pcr_request(pcr(signerName=OTHER)), api_version="v1beta1")
    outcome(plugin, req)
    assert authz.calls == [
        Attributes(
            user=NODE_USER,
            groups=NODE_GROUPS,
            verb="request-podcertificate-signer",
            api_group="certificates.k8s.io",
            api_version="v1beta1",
            resource=OTHER,
            name="default",
            namespace="ns",
            resource_request=True,
        )
    ]


def test_pod_certificate_signer_with_rbac() -> None:
    """End to end with the RBAC authorizer: a ClusterRole naming the signer as a resource."""
    from credprov.nodeauth.rbac import RBACAuthorizer

    role = {
        "kind": "ClusterRole",
        "metadata": {"name": "signer"},
        "rules": [
            {
                "verbs": ["request-podcertificate-signer"],
                "apiGroups": ["certificates.k8s.io"],
                "resources": [OTHER],
            }
        ],
    }
    binding = {
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "nodes-signer"},
        "roleRef": {"kind": "ClusterRole", "name": "signer"},
        "subjects": [{"kind": "Group", "name": "system:nodes"}],
    }
    rbac = RBACAuthorizer([role, binding])
    plugin = NodeRestriction(
        PCR_OBJECTS, feature_gates={"PodCertificateRequest": True}, authorizer=rbac.authorize
    )
    assert outcome(plugin, pcr_request(pcr(signerName=OTHER))) is None
    third = "third.example.com/signer"
    assert outcome(plugin, pcr_request(pcr(signerName=third))) == not_authorized_signer(third)


def test_pod_certificate_requests_gate_off_by_default() -> None:
    assert outcome(NodeRestriction(PCR_OBJECTS), pcr_request(pcr())) == forbidden(
        "PodCertificateRequest feature gate is disabled"
    )


def test_plain_errors_read_as_is() -> None:
    plugin = NodeRestriction(PCR_OBJECTS, feature_gates={"PodCertificateRequest": True})
    with pytest.raises(AdmissionError) as info:
        plugin.admit(pcr_request(pcr(podUID="stale")))
    assert info.value.reason == "InternalError"
    assert str(info.value) == info.value.message


def test_cryptography_is_imported_only_for_csrs() -> None:
    code = "import sys, credprov.nodeauth.admission as a\nprint('cryptography' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
