# O(n log n): the sort-and-sweep, but every stretch is read with input() and sorted with a Python key function.
def main():
    n = int(input())
    stretches = []
    for _ in range(n):
        left, r = map(int, input().split())
        stretches.append([left, r])
    stretches.sort(key=lambda s: s[0])
    merged = [stretches[0]]
    for left, r in stretches[1:]:
        last = merged[-1]
        if left <= last[1]:
            last[1] = max(last[1], r)
        else:
            merged.append([left, r])
    print(sum(r - left for left, r in merged), len(merged))


main()
