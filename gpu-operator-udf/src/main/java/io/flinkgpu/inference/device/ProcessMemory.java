package io.flinkgpu.inference.device;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * Anonymous resident memory of this process (resident less file-backed and shared pages), from
 * Linux's {@code /proc/self/statm}. A session's weights, arenas and buffers are anonymous memory;
 * the pages of ONNX Runtime's shared library that a process touches the first time it creates or
 * runs a session are file-backed and are left out, so the first model measured in a JVM is not
 * charged the library's code (tens of MiB), and a page the kernel evicts and reads back does not
 * move the measurement.
 */
final class ProcessMemory {
    private static final Path STATM = Path.of("/proc/self/statm");
    /** The kernel's page size; 4 KiB on the x86-64 and arm64 kernels we run on. */
    static final long PAGE_BYTES = 4096;

    private ProcessMemory() {}

    static OptionalLong anonymousResidentBytes() {
        try {
            return parseStatm(new String(Files.readAllBytes(STATM), StandardCharsets.US_ASCII));
        } catch (IOException | RuntimeException e) {
            return OptionalLong.empty();
        }
    }

    /** statm's fields: size, resident, shared (file-backed or shared resident), text, lib, data, dt; in pages. */
    static OptionalLong parseStatm(String statm) {
        String[] fields = statm.trim().split("\\s+");
        if (fields.length < 3) {
            return OptionalLong.empty();
        }
        try {
            long resident = Long.parseLong(fields[1]);
            long shared = Long.parseLong(fields[2]);
            return OptionalLong.of(Math.max(0, resident - shared) * PAGE_BYTES);
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }
}
