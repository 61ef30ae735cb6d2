"""src/java/pom.xml against the project (ctest java.pom): org.deferd:deferd at the version of
include/deferd/client.h (the project's one source of it), a jar, Apache-2.0, Java 17, and
no dependency (the client needs only the JDK)."""

from __future__ import annotations

import os
import re
import unittest
import xml.etree.ElementTree as ET

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def project_version() -> str:
    with open(os.path.join(TOP, "include", "deferd", "client.h")) as f:
        text = f.read()
    return ".".join(re.search(rf"^#define DEFERD_VERSION_{p} (\d+)$", text, re.M).group(1)
                    for p in ("MAJOR", "MINOR", "PATCH"))


class Pom(unittest.TestCase):
    def test_coordinates_license_and_no_dependencies(self) -> None:
        pom = ET.parse(os.path.join(TOP, "src", "java", "pom.xml")).getroot()
        get = lambda path: pom.findtext(path, namespaces=NS)  # noqa: E731
        self.assertEqual((get("m:groupId"), get("m:artifactId"), get("m:packaging")),
                         ("org.deferd", "deferd", "jar"))
        self.assertEqual(get("m:version"), project_version())
        self.assertEqual(get("m:licenses/m:license/m:name"), "Apache License, Version 2.0")
        self.assertEqual(get("m:properties/m:maven.compiler.release"), "17")
        self.assertIsNone(pom.find("m:dependencies", NS))
        with open(os.path.join(TOP, "LICENSE")) as f:
            self.assertIn("Apache License", f.read(200))


if __name__ == "__main__":
    unittest.main()
