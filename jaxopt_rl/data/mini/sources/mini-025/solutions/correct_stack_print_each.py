# O(n): monotonic stack, but reads with input() and writes each answer with a separate print() call.
n = int(input())
heights = list(map(int, input().split()))
answer = [0] * n
waiting = []
for i in range(n):
    while waiting and heights[waiting[-1]] < heights[i]:
        answer[waiting.pop()] = i + 1
    waiting.append(i)
for i in range(n - 1):
    print(answer[i], end=" ")
print(answer[n - 1])
