package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtSession;
import java.util.ArrayList;
import java.util.List;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaDeviceProp;
import jcuda.runtime.cudaError;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds CUDA GPUs once per JVM. A GPU counts only when JCuda sees it (driver and runtime
 * present) and ONNX Runtime can place a session on it (the GPU build is on the classpath and
 * {@code addCUDA} succeeds). Anything else is "no CUDA here", logged once with the reason and
 * never thrown: no GPU is the normal case.
 *
 * <p>How each absence shows: without a driver {@code cudaGetDeviceCount}
 * returns error 35 (insufficient driver); without the native libraries JCuda throws a
 * {@link LinkageError}; with exceptions enabled it throws {@code CudaException}; the CPU build of
 * ONNX Runtime fails {@code addCUDA} with an {@code OrtException}, and the GPU build without a
 * driver does the same.
 */
public final class CudaProbe {
    private static final Logger LOG = LoggerFactory.getLogger(CudaProbe.class);
    private static Result result;

    private CudaProbe() {}

    /** One GPU as JCuda reports it. Properties only: probing creates no CUDA context. */
    public record Gpu(int ordinal, String name, long totalMemoryBytes) {}

    /** The GPUs usable here, or none with the reason why. */
    public record Result(List<Gpu> gpus, String reason) {
        public Result {
            gpus = List.copyOf(gpus);
        }

        public boolean available() {
            return !gpus.isEmpty();
        }
    }

    /** The probe's result; the first call probes and logs, later calls return the same result. */
    public static synchronized Result get() {
        if (result == null) {
            result = probe();
            if (result.available()) {
                LOG.info("CUDA: {} usable GPU(s): {}", result.gpus().size(), result.gpus());
            } else {
                LOG.info("No CUDA here ({}); models run on the CPU or on simulated devices", result.reason());
            }
        }
        return result;
    }

    static Result probe() {
        List<Gpu> gpus;
        try {
            gpus = JCudaQuery.gpus();
        } catch (LinkageError e) {
            return new Result(List.of(), "JCuda cannot load the CUDA runtime: " + e);
        } catch (JCudaQuery.Failure e) {
            return new Result(List.of(), e.getMessage());
        } catch (RuntimeException e) { // jcuda.CudaException when another library enabled JCuda exceptions
            return new Result(List.of(), "CUDA runtime failed: " + e.getMessage());
        }
        if (gpus.isEmpty()) {
            return new Result(List.of(), "the CUDA runtime reports no GPU");
        }
        try (OrtSession.SessionOptions options = new OrtSession.SessionOptions()) {
            options.addCUDA(gpus.get(0).ordinal());
        } catch (Exception | LinkageError e) {
            return new Result(List.of(), "ONNX Runtime cannot use CUDA (" + e.getMessage()
                    + "); the GPU build of ONNX Runtime comes with the Maven profile 'gpu'");
        }
        return new Result(gpus, "");
    }

    /** The JCuda calls, kept in their own class so that a missing JCuda is a catchable LinkageError. */
    private static final class JCudaQuery {
        static final class Failure extends Exception {
            private static final long serialVersionUID = 1L;

            Failure(String message) {
                super(message);
            }
        }

        static List<Gpu> gpus() throws Failure {
            JCuda.setExceptionsEnabled(false);
            int[] count = new int[1];
            int rc = JCuda.cudaGetDeviceCount(count);
            if (rc != cudaError.cudaSuccess) {
                throw new Failure("cudaGetDeviceCount failed with " + cudaError.stringFor(rc) + " (" + rc + ")"
                        + (rc == cudaError.cudaErrorInsufficientDriver ? ": no NVIDIA driver" : ""));
            }
            List<Gpu> gpus = new ArrayList<>();
            for (int i = 0; i < count[0]; i++) {
                cudaDeviceProp prop = new cudaDeviceProp();
                rc = JCuda.cudaGetDeviceProperties(prop, i);
                if (rc != cudaError.cudaSuccess) {
                    throw new Failure("cudaGetDeviceProperties(" + i + ") failed with " + cudaError.stringFor(rc));
                }
                gpus.add(new Gpu(i, prop.getName(), prop.totalGlobalMem));
            }
            return gpus;
        }
    }
}
