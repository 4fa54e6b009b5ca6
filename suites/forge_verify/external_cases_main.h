// forge-verify external-cases: writes the cases file of the external-producer interface
// (docs/EXTERNAL_PRODUCER.md). Exit 0 written, 2 bad usage (nothing written), 3 the write failed.
#pragma once
#include <string>

namespace fh {
int run_external_cases(int argc, char** argv, const std::string& revision);
}
