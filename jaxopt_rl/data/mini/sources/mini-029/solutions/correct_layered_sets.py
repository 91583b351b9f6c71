# O(n + P): palindromes of length L are extended from those of length L - 2, storing start positions in sets.
import sys


def main():
    s = sys.stdin.readline().strip()
    n = len(s)
    odd = set(range(n))  # starts of palindromes of the current odd length
    even = {i for i in range(n - 1) if s[i] == s[i + 1]}
    total = len(odd) + len(even)
    length = 1
    while odd or even:
        length += 2
        odd = {i - 1 for i in odd if i >= 1 and i + length - 2 < n and s[i - 1] == s[i + length - 2]}
        even = {
            i - 1 for i in even if i >= 1 and i + length - 1 < n and s[i - 1] == s[i + length - 1]
        }
        total += len(odd) + len(even)
    print(total)


main()
