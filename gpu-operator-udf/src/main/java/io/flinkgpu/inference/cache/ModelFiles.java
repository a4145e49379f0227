package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.cache.ModelCache.ModelLoadException;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.PrecisionVariant;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a model version's bytes from the repository for a cold load: the full model, or one of
 * its precision variants, which must be a regular file in the same version directory (a link
 * that resolves elsewhere is refused).
 */
final class ModelFiles {
    private static final Logger LOG = LoggerFactory.getLogger(ModelFiles.class);

    private ModelFiles() {}

    static byte[] read(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        try {
            return Files.readAllBytes(resolved.file());
        } catch (IOException e) {
            throw new ModelLoadException("cannot read " + resolved.file() + " for " + resolved.id() + ": " + e);
        }
    }

    /** The variant's bytes, or null (logged) when its declared file is missing. */
    static byte[] readVariant(ModelRepository.ResolvedModel resolved, PrecisionVariant v) throws ModelLoadException {
        Path file = resolved.file().resolveSibling(v.file());
        if (!Files.isRegularFile(file)) {
            LOG.warn("Precision variant {} of {} is declared but {} is missing", v.precision(), resolved.id(), file);
            return null;
        }
        try {
            Path real = file.toRealPath();
            if (!real.getParent().equals(resolved.file().toRealPath().getParent())) {
                throw new ModelLoadException(file + " resolves outside the version directory of " + resolved.id());
            }
            return Files.readAllBytes(real);
        } catch (IOException x) {
            throw new ModelLoadException("cannot read precision variant " + file + " of " + resolved.id() + ": " + x);
        }
    }
}
