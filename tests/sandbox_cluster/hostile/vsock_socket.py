# Create and bind an AF_VSOCK socket: it would occupy the host's vsock port space.
import socket

AF_VSOCK = 40
try:
    s = socket.socket(AF_VSOCK, socket.SOCK_STREAM)
except OSError as exc:
    print("refused", exc.errno)
    raise SystemExit(1) from None
try:
    s.bind((0xFFFFFFFF, 5005))  # VMADDR_CID_ANY
    print("ESCAPED bound")
except OSError as exc:
    print("ESCAPED created", exc.errno)
raise SystemExit(1)
