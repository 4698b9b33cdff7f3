#include "python/straggler_binding.h"

#include <string>

#include "python/errors.h"
#include "train/straggler.h"

namespace serene::python {
namespace py = pybind11;

void BindStraggler(py::module_& m) {
  using train::StragglerInjector;
  py::class_<StragglerInjector>(m, "Straggler", R"doc(A straggler pattern (docs/training.md).

Straggler(pattern, seed=1, rank=0): pattern is "none",
"slow_worker[:p[:min[:max]]]", "failure[:p[:duration_s]]" or
"heterogeneous:factor[:from[:until]]"; the schedule is serene-train's for the same pattern,
job seed and rank. next_delay(compute_s) records one iteration's compute time
and returns the seconds to sleep now (it never sleeps itself).
)doc")
      .def(py::init([](const std::string& pattern, uint64_t seed, int rank) {
             train::StragglerSpec spec = Take(train::ParseStragglerSpec(pattern));
             return StragglerInjector(spec, train::StragglerSeed(seed, rank));
           }),
           py::arg("pattern"), py::arg("seed") = 1, py::arg("rank") = 0)
      .def("next_delay", &StragglerInjector::NextDelay, py::arg("compute_s"))
      .def_property_readonly("pattern",
                             [](const StragglerInjector& s) { return s.spec().ToString(); })
      .def_property_readonly("iterations", &StragglerInjector::iterations)
      .def_property_readonly("delayed_iterations", &StragglerInjector::delayed_iterations)
      .def_property_readonly("total_delay_s", &StragglerInjector::total_delay_s)
      .def_property_readonly("mean_compute_s", &StragglerInjector::mean_compute_s)
      .def_property_readonly("failed", &StragglerInjector::failed);
}

}  // namespace serene::python
