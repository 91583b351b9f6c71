# O(n): Manacher's algorithm for odd and even centres; the answer is the sum of palindrome radii.
import sys


def main():
    s = sys.stdin.readline().strip()
    n = len(s)
    total = 0
    for parity in (1, 0):  # 1: odd-length palindromes, 0: even-length ones
        radius = [0] * n
        left, right = 0, -1  # rightmost palindrome found so far: s[left..right]
        for i in range(n):
            k = 0 if i > right else min(radius[left + right - i + (1 - parity)], right - i + 1)
            if parity == 1:
                k = max(k, 1)
                while i - k >= 0 and i + k < n and s[i - k] == s[i + k]:
                    k += 1
                radius[i] = k
                if i + k - 1 > right:
                    left, right = i - k + 1, i + k - 1
            else:
                while i - k - 1 >= 0 and i + k < n and s[i - k - 1] == s[i + k]:
                    k += 1
                radius[i] = k
                if i + k - 1 > right:
                    left, right = i - k, i + k - 1
        total += sum(radius)
    print(total)


main()
