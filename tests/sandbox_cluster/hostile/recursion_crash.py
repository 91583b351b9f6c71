import sys

sys.setrecursionlimit(10**9)
nested = []
for _ in range(3 * 10**5):
    nested = [nested]
print(repr(nested)[:10])
