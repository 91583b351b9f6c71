# O(n log n): the same earliest-end greedy, reading each meeting with input() and sorting with a lambda key.
n = int(input())
meetings = []
for _ in range(n):
    s, e = map(int, input().split())
    meetings.append((s, e))
meetings.sort(key=lambda m: m[1])
count = 0
free_at = -1
for s, e in meetings:
    if s >= free_at:
        count += 1
        free_at = e
print(count)
