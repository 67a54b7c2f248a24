#!/usr/bin/env bash
# Make a private certificate authority and one certificate for the cluster, for Dask's TLS
# (tls:// addresses, mutual authentication: every process shows a certificate of this CA).
#
#   deploy/tls/make-certs.sh [DIR] [NAME...]
#
# DIR (default ./taskbfs-tls) receives ca.pem, ca-key.pem (keep it off the cluster),
# cluster.pem and cluster-key.pem (mode 600). NAMEs are the host names and IP addresses the
# certificate is valid for (default: localhost 127.0.0.1); list every host that runs a
# scheduler or worker. One certificate for all processes keeps the example short; a
# certificate per host works the same way (the same CA signs each).
set -euo pipefail

DIR=${1:-./taskbfs-tls}
shift || true
NAMES=("$@")
(( ${#NAMES[@]} )) || NAMES=(localhost 127.0.0.1)
DAYS=${TASKBFS_TLS_DAYS:-365}

command -v openssl >/dev/null || { echo "make-certs: openssl is needed" >&2; exit 1; }
mkdir -p "$DIR"
umask 077

san=""
for name in "${NAMES[@]}"; do
    if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then san+="IP:$name,"; else san+="DNS:$name,"; fi
done
san=${san%,}

openssl req -x509 -newkey rsa:3072 -nodes -days "$DAYS" -subj "/CN=taskbfs cluster CA" \
    -keyout "$DIR/ca-key.pem" -out "$DIR/ca.pem" 2>/dev/null
openssl req -newkey rsa:3072 -nodes -subj "/CN=${NAMES[0]}" \
    -keyout "$DIR/cluster-key.pem" -out "$DIR/cluster.csr" 2>/dev/null
openssl x509 -req -in "$DIR/cluster.csr" -CA "$DIR/ca.pem" -CAkey "$DIR/ca-key.pem" \
    -CAcreateserial -days "$DAYS" -out "$DIR/cluster.pem" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san") 2>/dev/null
rm -f "$DIR/cluster.csr" "$DIR/ca.srl"
chmod 644 "$DIR/ca.pem" "$DIR/cluster.pem"
echo "made $DIR/ca.pem and $DIR/cluster.pem ($san), valid $DAYS days" >&2
