package io.flinkgpu.inference.device;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/** Resident memory of this process, from Linux's {@code /proc/self/statm}. */
final class ProcessMemory {
    private static final Path STATM = Path.of("/proc/self/statm");
    /** The kernel's page size; 4 KiB on the x86-64 and arm64 kernels we run on. */
    static final long PAGE_BYTES = 4096;

    private ProcessMemory() {}

    static OptionalLong residentBytes() {
        try {
            return parseStatm(new String(Files.readAllBytes(STATM), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /** The second field of statm is resident pages. */
    static OptionalLong parseStatm(String statm) {
        String[] fields = statm.trim().split("\\s+");
        if (fields.length < 2) {
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(Long.parseLong(fields[1]) * PAGE_BYTES);
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }
}
