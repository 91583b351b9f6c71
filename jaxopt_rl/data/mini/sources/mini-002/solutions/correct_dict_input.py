# O(n): the single-pass dict, but every weight is read with its own input() call (slow line-by-line I/O).
def main():
    n, w = map(int, input().split())
    seen = {}
    pairs = 0
    for _ in range(n):
        x = int(input())
        if w - x in seen:
            pairs += seen[w - x]
        if x in seen:
            seen[x] += 1
        else:
            seen[x] = 1
    print(pairs)


main()
