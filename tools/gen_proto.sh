#!/usr/bin/env bash
# Regenerate the Python protobuf modules (and .pyi stubs) of streamalloc.ir.proto
# from the .proto files next to them. Run from anywhere; needs grpcio-tools:
#   pip install grpcio-tools
#   bash tools/gen_proto.sh
set -euo pipefail

cd "$(dirname "$0")/.."
PROTO_DIR=src/streamalloc/ir/proto
PYTHON=${PYTHON:-python}

"$PYTHON" -m grpc_tools.protoc \
    -I "$PROTO_DIR" \
    --python_out="$PROTO_DIR" \
    --pyi_out="$PROTO_DIR" \
    "$PROTO_DIR/ge_ir.proto" \
    "$PROTO_DIR/var_manager.proto"

# protoc writes `import ge_ir_pb2` (top-level); make it a package-relative import
# so var_manager_pb2 works as streamalloc.ir.proto.var_manager_pb2.
sed -i -E 's/^import ge_ir_pb2 as /from . import ge_ir_pb2 as /' \
    "$PROTO_DIR/var_manager_pb2.py" "$PROTO_DIR/var_manager_pb2.pyi"

# Fail loudly if the rewrite did not happen (e.g. protoc changed its output).
if grep -qE '^import ge_ir_pb2' "$PROTO_DIR/var_manager_pb2.py" "$PROTO_DIR/var_manager_pb2.pyi"; then
    echo "gen_proto.sh: failed to rewrite the ge_ir_pb2 import" >&2
    exit 1
fi
grep -q '^from \. import ge_ir_pb2 as ' "$PROTO_DIR/var_manager_pb2.py" || {
    echo "gen_proto.sh: expected ge_ir_pb2 import not found in var_manager_pb2.py" >&2
    exit 1
}

echo "generated: $PROTO_DIR/{ge_ir,var_manager}_pb2.py{,i}"
