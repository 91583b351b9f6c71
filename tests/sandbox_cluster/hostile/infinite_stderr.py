import sys

line = "e" * 4096
while True:
    sys.stderr.write(line)
