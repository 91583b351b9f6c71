# O(sum over items of min(W, weight so far)): the loop DP, but only up to the largest weight total reachable so far (best[c] = best value within weight c).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    best = [0] * (cap + 1)
    reach = 0
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        if w > cap:
            continue
        new_reach = min(cap, reach + w)
        # best[c] means "within weight c": cells above the old reach inherit its value
        best[reach + 1:new_reach + 1] = [best[reach]] * (new_reach - reach)
        reach = new_reach
        for c in range(reach, w - 1, -1):
            cand = best[c - w] + v
            if cand > best[c]:
                best[c] = cand
    print(best[reach])


main()
