# O(n log n): top-down recursive merge sort on list slices (allocation and call overhead at every level).
import sys


def sort_count(a):
    if len(a) <= 1:
        return a, 0
    mid = len(a) // 2
    left, x = sort_count(a[:mid])
    right, y = sort_count(a[mid:])
    merged = []
    count = x + y
    i = j = 0
    while i < len(left) and j < len(right):
        if right[j] < left[i]:
            merged.append(right[j])
            count += len(left) - i
            j += 1
        else:
            merged.append(left[i])
            i += 1
    merged.extend(left[i:])
    merged.extend(right[j:])
    return merged, count


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    print(sort_count(list(map(int, data[1:1 + n])))[1])


main()
