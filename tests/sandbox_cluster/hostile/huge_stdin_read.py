import sys

print(len(sys.stdin.buffer.read()))
