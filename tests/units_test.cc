#include <catch2/catch.hpp>

#include "core/units.h"

using vramsim::units::Dimension;
using vramsim::units::parse;

TEST_CASE("decimal and binary byte prefixes are kept apart", "[units]") {
  CHECK(*parse("1GB", Dimension::Bytes) == 1e9);
  CHECK(*parse("1GiB", Dimension::Bytes) == 1073741824.0);
  CHECK(*parse("1.318MiB", Dimension::Bytes) == Approx(1.318 * 1048576.0));
  CHECK(*parse("18106MiB", Dimension::Bytes) == 18106.0 * 1048576.0);
  CHECK(*parse("512 KiB", Dimension::Bytes) == 512.0 * 1024.0);
}

TEST_CASE("bandwidth, time, power and compute units", "[units]") {
  CHECK(*parse("13.9GB/s", Dimension::Bandwidth) == Approx(13.9e9));
  CHECK(*parse("1.5TB/s", Dimension::Bandwidth) == Approx(1.5e12));
  CHECK(*parse("2us", Dimension::Time) == Approx(2e-6));
  CHECK(*parse("43ms", Dimension::Time) == Approx(0.043));
  CHECK(*parse("575W", Dimension::Power) == 575.0);
  CHECK(*parse("165.2TFLOPS", Dimension::FlopRate) == Approx(165.2e12));
}

TEST_CASE("values without a unit, with the wrong unit or negative are rejected", "[units]") {
  CHECK_FALSE(parse("13.9", Dimension::Bandwidth));
  CHECK_FALSE(parse("-13.9GB/s", Dimension::Bandwidth));
  CHECK_FALSE(parse("13.9GB", Dimension::Bandwidth));
  CHECK_FALSE(parse("2us", Dimension::Bytes));
  CHECK_FALSE(parse("", Dimension::Time));
  CHECK_FALSE(parse("GB/s", Dimension::Bandwidth));
  CHECK_FALSE(parse("1e400GB", Dimension::Bytes));
  CHECK_FALSE(parse("nanGB", Dimension::Bytes));
  CHECK_FALSE(parse("12 parsecs", Dimension::Time));
}

TEST_CASE("rates: per second, per minute, per hour, hertz", "[units]") {
  CHECK(*parse("2/s", Dimension::Rate) == 2.0);
  CHECK(*parse("90/min", Dimension::Rate) == Approx(1.5));
  CHECK(*parse("3600/h", Dimension::Rate) == Approx(1.0));
  CHECK(*parse("5Hz", Dimension::Rate) == 5.0);
  CHECK_FALSE(parse("2", Dimension::Rate));
}
