/// Generated geo clusters: bounded before any work, one line naming the option.

#include "core/cluster.hpp"
#include "core/cluster_generator.hpp"
#include "core/error.hpp"

#include <doctest/doctest.h>

using namespace hetsim;

TEST_CASE("generate-cluster: a region count or a device count past the bounds is refused before any work")
{
  CHECK(region_names("3") == std::vector<std::string>{"region0", "region1", "region2"});
  CHECK(region_names("a,b") == std::vector<std::string>{"a", "b"});
  // Past int: once stoi's internal error.
  CHECK_THROWS_WITH_AS(region_names("2147483648"), doctest::Contains("--regions: expected a count of at most 1024"),
                       InputError);
  CHECK_THROWS_WITH_AS(region_names("1025"), doctest::Contains("got 1025"), InputError);
  CHECK(region_names("1024").size() == 1024);

  GeoClusterSpec spec;
  spec.regions            = region_names("4");
  spec.devices_per_region = Cluster::kMaxDevices / 4 + 1;
  CHECK_THROWS_WITH_AS(generate_geo_cluster(spec), doctest::Contains("--devices-per-region: expected a positive count"),
                       InputError);
  spec.devices_per_region = 2;
  CHECK(generate_geo_cluster(spec).contains("regions"));
}
