import sys

print(1)
sys.exit(0)
print(2, 3)
