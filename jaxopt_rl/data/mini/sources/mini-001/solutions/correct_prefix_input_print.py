# O(n + q): the same prefix sums, but input() per line and one print() per answer (slow line-by-line I/O).
def main():
    _n, q = map(int, input().split())
    d = list(map(int, input().split()))
    up = [0]
    down = [0]
    for x in d:
        up.append(up[-1] + max(x, 0))
        down.append(down[-1] + max(-x, 0))
    for _ in range(q):
        a, b = map(int, input().split())
        if a <= b:
            print(up[b] - up[a])
        else:
            print(down[a] - down[b])


main()
