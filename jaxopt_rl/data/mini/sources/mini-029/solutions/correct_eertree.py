# O(n): palindromic tree (eertree); every position adds the number of palindromic suffixes of the prefix.
import sys


def main():
    s = sys.stdin.readline().strip()
    # Node 0: imaginary root of length -1, node 1: empty string of length 0.
    length = [-1, 0]
    link = [0, 0]
    depth = [0, 0]  # number of palindromic suffixes along suffix links
    edges = [{}, {}]
    last = 1
    total = 0
    for i, ch in enumerate(s):
        cur = last
        while True:
            k = length[cur]
            if i - k - 1 >= 0 and s[i - k - 1] == ch:
                break
            cur = link[cur]
        if ch in edges[cur]:
            last = edges[cur][ch]
        else:
            node = len(length)
            length.append(length[cur] + 2)
            edges.append({})
            edges[cur][ch] = node
            if length[node] == 1:
                link.append(1)
            else:
                back = link[cur]
                while True:
                    k = length[back]
                    if i - k - 1 >= 0 and s[i - k - 1] == ch:
                        break
                    back = link[back]
                link.append(edges[back][ch])
            depth.append(depth[link[node]] + 1)
            last = node
        total += depth[last]
    print(total)


main()
