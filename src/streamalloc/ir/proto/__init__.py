"""Protobuf schemas for Huawei GE's graph dump (``ge_ir.proto``, package
``ge.proto``) and variable-manager state (``var_manager.proto``, package
``deployer``).

``ge_ir_pb2`` / ``var_manager_pb2`` (and their ``.pyi`` stubs) are generated
from the ``.proto`` files in this directory; do not edit them by hand.
Regenerate after changing a ``.proto`` with (needs ``grpcio-tools``)::

    bash tools/gen_proto.sh
"""
