# O(N + D log D): counts in a plain dict, reading the text line by line with input() and printing each line.
n, k = map(int, input().split())
counts = {}
seen = 0
while seen < n:
    for word in input().split():
        counts[word] = counts.get(word, 0) + 1
        seen += 1
ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
for word, count in ranked[:k]:
    print(word, count)
