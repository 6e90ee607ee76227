# Certificates and kubeconfig of one test cluster, made with the openssl CLI.
# Sourced, never run. Every key and certificate lives under $1/pki; nothing
# is shared between clusters.

# new_ca DIR NAME CN: a self-signed CA DIR/NAME.{crt,key}.
new_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$1/$2.key" -out "$1/$2.crt" -days 3650 -subj "/CN=$3" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# new_cert DIR CA NAME SUBJECT USAGE [SAN]: DIR/NAME.{crt,key} signed by
# DIR/CA; USAGE is serverAuth, clientAuth or both (comma-separated).
new_cert() {
  local dir="$1" ca="$2" name="$3" subj="$4" usage="$5" san="${6:-}"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "$subj" 2>/dev/null
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$dir/$name.ext"
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.crt" -CAkey "$dir/$ca.key" \
    -CAcreateserial -out "$dir/$name.crt" -days 3650 -extfile "$dir/$name.ext" 2>/dev/null
  rm -f "$dir/$name.csr" "$dir/$name.ext"
}

# make_pki DIR: the cluster CA and its certificates (API server serving,
# admin client in system:masters, controller-manager, scheduler and kwok
# serving, the API server's kubelet client),
# the service-account signing key pair, and a second CA for Kueue's webhook
# and metrics servers.
make_pki() {
  local p="$1/pki"
  mkdir -p "$p"
  chmod 700 "$p"
  local local_san="IP:127.0.0.1,DNS:localhost"
  new_ca "$p" ca "taugrid-test-cluster-ca"
  new_cert "$p" ca apiserver "/CN=kube-apiserver" serverAuth \
    "$local_san,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  new_cert "$p" ca admin "/O=system:masters/CN=taugrid-test-admin" clientAuth
  new_cert "$p" ca controller-manager "/CN=kube-controller-manager" serverAuth "$local_san"
  new_cert "$p" ca scheduler "/CN=kube-scheduler" serverAuth "$local_san"
  # kwok serves the nodes' kubelet API (pod logs) at 127.0.0.1; the API
  # server checks its certificate against the cluster CA and presents its
  # own client certificate.
  new_cert "$p" ca kwok "/CN=kwok-kubelet" serverAuth "$local_san"
  new_cert "$p" ca apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  new_ca "$p" kueue-ca "taugrid-test-kueue-ca"
  new_cert "$p" kueue-ca kueue "/CN=kueue-webhook" serverAuth "$local_san"
}

# write_kubeconfig DIR PORT: DIR/kubeconfig for the admin identity, with the
# certificates inlined so the file can be copied elsewhere.
write_kubeconfig() {
  local p="$1/pki"
  cat >"$1/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: taugrid-test
  cluster:
    server: https://127.0.0.1:$2
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: taugrid-test-admin
  user:
    client-certificate-data: $(base64 -w0 "$p/admin.crt")
    client-key-data: $(base64 -w0 "$p/admin.key")
contexts:
- name: taugrid-test
  context:
    cluster: taugrid-test
    user: taugrid-test-admin
current-context: taugrid-test
KUBECONFIG
  chmod 600 "$1/kubeconfig"
}
