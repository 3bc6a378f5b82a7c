// SCAFFOLD: the CLI grows with the campaign (issue 3).
#include <iostream>
int main() { std::cout << "kvcheck\n"; return 0; }
